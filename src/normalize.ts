import { domainToASCII, domainToUnicode } from 'node:url';
/**
 * Canonical forms used for storage and matching (SPEC §4.1, §5). Pure functions, no I/O: they run
 * in the request path, in the import runner and in the CSV worker thread alike, and in migrations
 * that recompute stored keys (src/storage/migrate.ts), which is why they live outside any service.
 */

const LINKEDIN_HOST = /^(?:[a-z]{2,3}\.|www\.|m\.|mobile\.)?linkedin\.com$/;
const SLUG = /^[\p{L}\p{M}\p{N}_-]{1,100}$/u;
/** A URL already in canonical form (a trailing slash aside): what feeds and CRMs mostly send. */
const CANONICAL = /^https:\/\/www\.linkedin\.com\/in\/[a-z0-9_-]{1,100}\/?$/;

/**
 * `https://www.linkedin.com/in/<slug>` for any spelling of a LinkedIn profile URL (scheme or not,
 * country or mobile subdomain, the lightweight mobile site's `/mwlite` prefix, trailing slash, query, fragment, upper case, percent-encoding, a
 * sub-page of the profile such as `/in/<slug>/details/experience`); undefined when the text is not
 * a profile URL. The slug is stored decoded and lower-cased.
 */
export function canonicalLinkedin(input: string): string | undefined {
  // The fast path gives what the full parse below gives for these inputs, without a URL object
  // (~6 µs a record in a feed); test/normalize.test.ts compares the two.
  if (CANONICAL.test(input)) return input.endsWith('/') ? input.slice(0, -1) : input;
  return parseLinkedin(input);
}

/** The full parse behind canonicalLinkedin (exported for the test that compares it with the fast path). */
export function parseLinkedin(input: string): string | undefined {
  let text = input.trim();
  // the URL parser drops every tab and line break, wherever it is: ann<TAB>smith would be the
  // profile annsmith (a tester's case, forty-seventh session); it reads a backslash as a slash:
  // …/in/ann19\x would be the profile ann19's sub-page, somebody else's key (an API tester's case)
  if (/[\u0000-\u001f\u007f\\]/.test(text)) return undefined;
  if (!/^https?:\/\//i.test(text)) text = `https://${text}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.username || url.password || (url.port && url.port !== '443' && url.port !== '80')) return undefined;
  if (!LINKEDIN_HOST.test(url.hostname.toLowerCase())) return undefined;
  const parts = url.pathname.split('/').filter(Boolean);
  // LinkedIn's lightweight mobile site links a profile as /mwlite/in/<slug>
  if (parts[0]?.toLowerCase() === 'mwlite') parts.shift();
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'in') return undefined;
  let slug: string;
  try {
    // composed (NFC): a decomposed é (e + U+0301), as macOS writes it, is the same slug
    slug = decodeURIComponent(parts[1]!).normalize('NFC').toLowerCase();
  } catch {
    return undefined;
  }
  if (!SLUG.test(slug)) return undefined;
  return `https://www.linkedin.com/in/${slug}`;
}

/**
 * Whether text has more than `max` characters, counted as code points (SPEC §4.1's limits are in
 * characters: an emoji or a rare CJK character is one, though JavaScript counts two units).
 */
export function longerThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  if (text.length > 2 * max) return true;
  let n = 0;
  for (const _ of text) if (++n > max) return true;
  return false;
}

/**
 * What is wrong with a contact's or a feed record's text field, if anything: too long, or a NUL
 * character. A NUL cannot be searched for (SQLite's LIKE pattern ends at it) and makes the
 * downloaded CSV a file no upload accepts, so it is refused where text comes in.
 */
export function textProblem(text: string, field: string, max: number): string | undefined {
  if (longerThan(text, max)) return `${field} is longer than ${max} characters`;
  if (text.includes('\0')) return `${field} contains a NUL character`;
  return undefined;
}

/** The slug of a canonical LinkedIn URL (the matching key of §5). */
export const linkedinSlug = (canonical: string): string => canonical.slice('https://www.linkedin.com/in/'.length);

const EMAIL = /^[^\s@<>(),;:"[\]]+@[^\s@<>(),;:"[\]]+\.[^\s@<>(),;:"[\]]+$/;

/** Characters that show nothing, which URL parsers drop or IDNA maps to nothing, and C1 controls. */
export const INVISIBLE = /[\u0080-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]|[\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]/u;
const INVISIBLE_OR_CONTROL = new RegExp(`${INVISIBLE.source}|[\\p{Cc}\\p{Cf}]`, 'u');
/** INVISIBLE, every one (to remove them). */
export const INVISIBLE_ALL = new RegExp(INVISIBLE.source, 'gu');

/**
 * Why a key that must compare equal to the same text typed again (an e-mail address, a reference
 * id) cannot be one: it holds a character that shows nothing — a zero-width space or
 * a byte order mark pasted along with it, a control character — so it would look like the typed
 * text and never match it. Names may hold such characters (a zero-width joiner in Persian or
 * Indic script), so this is only for keys.
 */
export function invisibleProblem(text: string, field: string): string | undefined {
  const c = INVISIBLE_OR_CONTROL.exec(text)?.[0];
  if (c === undefined) return undefined;
  const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return `${field} contains an invisible character (${code}); it would never match the same text typed without it`;
}

/** A letter or a digit of any script. */
export const HAS_LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** What exports and providers write for an unknown employer, in words (after trimming, in any case). */
const COMPANY_PLACEHOLDERS = new Set(['n/a', 'n.a.', 'n.a', 'na', 'none', 'null', 'unknown', 'not available', 'not applicable', 'tbd', 'tba']);

/**
 * Why a name or a company cannot be one: it has no letter or digit that shows — "-", "—", "...",
 * "?", a Hangul filler are what exports and providers write for "unknown", and taken as a company
 * they made a job change to "—" — or, for a company, it is such a placeholder in words ("N/A").
 */
export function placeholderProblem(text: string, field: 'name' | 'company'): string | undefined {
  const visible = text.replace(INVISIBLE_ALL, '');
  if (!HAS_LETTER_OR_DIGIT.test(visible)) return `${field} "${text}" has no letter or digit (a placeholder for an unknown ${field === 'name' ? 'name' : 'employer'} is not a ${field})`;
  // (compatibility forms too: ＮＡ and N／A are NA and N/A)
  if (field === 'company' && COMPANY_PLACEHOLDERS.has(visible.normalize('NFKC').trim().toLowerCase())) return `company "${text}" is a placeholder for an unknown employer, not a company`;
  return undefined;
}

/** A label of a domain name: letters and digits of any script, hyphens inside (RFC 1035, 5890). */
const DOMAIN_LABEL = /^[\p{L}\p{N}](?:[\p{L}\p{M}\p{N}-]*[\p{L}\p{M}\p{N}])?$/u;

/** RFC 5321 §4.5.3.1.1: the part before @ has at most 64 octets. */
const MAX_LOCAL_OCTETS = 64;
/** RFC 1035 §2.3.4: a label has at most 63 octets (a label beyond ASCII: its IDNA form, RFC 5890). */
const MAX_LABEL_OCTETS = 63;
/** RFC 1035 §2.3.4 (255 octets in the wire format): 253 characters written out. */
const MAX_DOMAIN_CHARS = 253;

/**
 * Why an address of EMAIL's shape is not one mail can go to (RFC 5321 §4.1.2's dot-atom), if it
 * is not: a dot opening or closing the local part or doubled in it, or a domain that is not of
 * labels — an empty one, one opening or closing with a hyphen, an underscore (`a..b@x.test`,
 * `a@-x.test`, `a@x.test.`, `a@x_y.test` were taken; a tester's cases); or a part longer than the
 * RFCs allow (a local part of 65 octets, a label of 64: taken until the twenty-ninth session).
 */
function undeliverable(email: string): string | undefined {
  const at = email.lastIndexOf('@');
  const local = email.slice(0, at);
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..')) return '';
  if (Buffer.byteLength(local) > MAX_LOCAL_OCTETS) return ` (the part before @ is longer than ${MAX_LOCAL_OCTETS} bytes)`;
  let domainChars = -1; // the dots between the labels
  let last = '';
  for (const label of email.slice(at + 1).split('.')) {
    if (!DOMAIN_LABEL.test(label)) return '';
    // a label beyond ASCII that IDNA refuses is left to the shape check above, as before
    const ascii = /^[\x00-\x7f]*$/.test(label) ? label : domainToASCII(label) || label;
    if (ascii.length > MAX_LABEL_OCTETS) return ` (a part of its domain is longer than ${MAX_LABEL_OCTETS} characters)`;
    domainChars += ascii.length + 1;
    last = label;
  }
  if (domainChars > MAX_DOMAIN_CHARS) return ` (its domain is longer than ${MAX_DOMAIN_CHARS} characters)`;
  // RFC 3696 §2: a top-level domain is never all digits; `ann@1.2.3.4` is an IP address, which
  // mail writes in brackets (an address literal, refused with the shape above); digits of any
  // form or script too (`ann@1.2.3.４`: a reviewer's case)
  if (/^\p{Nd}+$/u.test(last.normalize('NFKC'))) return ' (its domain ends in a number: an IP address is not a domain)';
  return undefined;
}

/**
 * What keeps `email` from being a plausible single e-mail address, if anything. `lookup`: the
 * address is only looked for (the list's `email=` filter), and one stored before the twenty-fifth
 * session in a shape no longer taken (`a..b@x.test`) must still be found: the shape alone is checked.
 */
export function emailProblem(email: string, field = 'email', lookup = false): string | undefined {
  const invisible = invisibleProblem(email, field);
  if (invisible) return invisible;
  const why = EMAIL.test(email) ? (lookup ? undefined : undeliverable(email)) : '';
  return why === undefined ? undefined : `${field} "${email}" is not an e-mail address${why}`;
}

/** True for a plausible single e-mail address (the shape, not deliverability). */
export const isEmail = (text: string): boolean => emailProblem(text) === undefined;

/**
 * The key e-mail addresses are matched and filtered by ("case-insensitive", SPEC §4.2, §5): the
 * local part in composed form (NFC) and Unicode lower case (`JOSÉ` = `josé`, also when one of them
 * is written decomposed); the domain lower-cased, and one beyond ASCII in its IDNA form
 * (`ÄRGER.de` = `ärger.de` = `xn--rger-koa.de`). Until migration 0024 addresses compared by
 * SQLite's NOCASE, which folds A–Z only.
 */
export function emailKey(email: string): string {
  const at = email.lastIndexOf('@');
  const local = email.slice(0, at < 0 ? email.length : at).normalize('NFC').toLowerCase();
  if (at < 0) return local;
  const domain = email.slice(at + 1);
  const folded = /^[\x00-\x7f]*$/.test(domain) ? domain.toLowerCase() : domainToASCII(domain) || domain.normalize('NFC').toLowerCase();
  return `${local}@${folded}`;
}

/**
 * Full-width digits and Latin letters (U+FF10–FF19, FF21–FF3A, FF41–FF5A), whose compatibility
 * mapping is their usual form. Not the full-width punctuation: "＠" made "@" after the address had
 * been checked (`ann＠corp.test@x.test` was stored as `ann@corp.test@x.test`: a reviewer's case).
 */
const WIDTH_FORMS = /[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]/g;

/**
 * A user account's e-mail as stored and looked up: trimmed, in Unicode's composed form (NFC) and
 * lower-cased, so that "jörg@…" typed with a precomposed ö (Windows) and with o + a combining
 * diaeresis (macOS) is one account (a tester's case: two accounts that looked the same). Like a
 * username of RFC 8265 (PRECIS), full-width letters are their usual ones ("ＡＤＭＩＮ@…" is
 * "admin@…"), and a domain written in its ASCII form (`xn--exmple-cua.com`) is kept in the
 * Unicode form people type (`exämple.com`): both were second accounts of one mailbox, one that
 * looked like another's in member lists (forty-first session, a tester's cases).
 */
export function accountEmail(email: string): string {
  const text = email.trim().replace(WIDTH_FORMS, (c) => c.normalize('NFKC')).normalize('NFC').toLowerCase();
  const at = text.lastIndexOf('@');
  // only a domain of DNS's letters, digits, dots and hyphens: domainToUnicode parses a URL's host,
  // and would drop a path or decode a %2e of something that is no domain (a reviewer's case)
  if (at < 0 || !text.includes('xn--', at) || !/^[a-z0-9.-]+$/.test(text.slice(at + 1))) return text;
  const domain = domainToUnicode(text.slice(at + 1));
  return domain ? `${text.slice(0, at + 1)}${domain.normalize('NFC')}` : text;
}

/** The e-mail key as stored beside an address: null when it is SQLite's lower() of it (A–Z folded; every address of ASCII letters), which the e-mail indexes take then (migration 0024). */
export function storedEmailKey(email: string | null): string | null {
  if (email === null) return null;
  const key = emailKey(email);
  return key === email.replace(/[A-Z]+/g, (s) => s.toLowerCase()) ? null : key;
}

// Legal-form suffixes dropped from company names for matching ("Acme, Inc." = "ACME"). Changing
// them changes stored keys: add a migration that recomputes them (as 0019 does, with the
// company_key() SQL function src/storage/migrate.ts provides).
const COMPANY_SUFFIXES = new Set([
  'inc', 'incorporated', 'llc', 'llp', 'lp', 'ltd', 'limited', 'corp', 'corporation', 'co', 'company', 'gmbh', 'ag', 'aktiengesellschaft', 'kg', 'ug',
  'plc', 'sa', 'sas', 'sarl', 'srl', 'spa', 'bv', 'nv', 'oy', 'ab', 'as', 'asa', 'aps', 'pty', 'pte', 'kk', 'sl', 'se', 'sro',
  'kft', 'zrt', 'nyrt', 'ltda', 'lda', 'bhd', 'oyj', 'kgaa', 'ohg', 'doo', 'sae', 'pvt',
  // eighteenth session: listed in Mexico (S.A.B.), Sweden (publ), Malaysia (Berhad), Indonesia
  // (Tbk), Spain's sole-shareholder forms (S.A.U., S.L.U.), US professional forms, Peru (EIRL)
  'sab', 'publ', 'berhad', 'tbk', 'sau', 'slu', 'pllc', 'eirl',
  // twenty-fourth session: Sweden's AB spelt out, as Aktiengesellschaft is (a tester's case)
  'aktiebolag',
  // twenty-fifth session (testers' cases): Limitada spelt out, Austria's GesmbH, Germany's eG,
  // gGmbH, e.K., GbR, PartG; SASU, S.A.P.I. (de C.V.), US public benefit and unlimited forms,
  // Latvia, Belgium (old forms), Switzerland (Sagl), Iceland, Bulgaria, Brazil, Croatia/Slovenia,
  // Japan romanized, France and the Netherlands' partnerships; joint-stock companies (JSC, PJSC),
  // UAE free zones, Gulf WLL, Peru's S.A.C., Turkey's Şti.; the Cyrillic forms as written.
  // Not "AD", "CIC" or "OU" as Latin words (Smart AD, Banque CIC, Lee & Ou: names): Estonia's OÜ
  // goes as written, with its Ü (ESTONIAN_OU).
  'limitada', 'gesmbh', 'eg', 'ggmbh', 'ek', 'gbr', 'partg', 'sasu', 'sapi', 'pbc', 'ulc', 'lllp', 'sia', 'sprl', 'bvba',
  'sagl', 'ehf', 'eood', 'ood', 'eireli', 'dd', 'yk', 'gk', 'snc', 'scs', 'vof', 'jsc', 'pjsc', 'ojsc', 'cjsc', 'fze', 'fzco', 'wll',
  'sac', 'sti', 'ооо', 'оао', 'зао', 'пао', 'ао', 'ад', 'еоод', 'оод', 'тоо', 'тов',
  // twenty-ninth session (a tester's cases): Thailand's PCL, the abbreviation of "Public Company
  // Limited", which went spelt out
  'pcl',
  // thirty-third session (a tester's cases): the partnership limited by shares of France,
  // Luxembourg and Belgium (SCA), and Germany's "mbH" after a word that is not "Ges." ("Acme
  // Verwaltungsgesellschaft mbH")
  'sca', 'mbh',
  // thirty-sixth session (a tester's case): Quebec's "Ltée" (limitée), as "Ltd" goes
  'ltee', 'limitee',
]);
/**
 * Legal forms that open a name: Indonesia's PT ("PT Telkom Indonesia"), Latvia's SIA, Lithuania's
 * UAB, joint-stock companies (JSC, PJSC), Russia's OOO in Latin letters, and Russia's, Ukraine's and
 * Kazakhstan's as written (ООО «Ромашка»). Dropped only with a name after them.
 */
const COMPANY_PREFIXES = new Set(['the', 'pt', 'sia', 'uab', 'jsc', 'pjsc', 'ojsc', 'cjsc', 'ooo', 'ооо', 'оао', 'зао', 'пао', 'ао', 'ип', 'тов', 'пат', 'тоо']);
/** Estonia's OÜ ending a name, written with its Ü: "Ou" alone is a name (Lee & Ou). */
const ESTONIAN_OU = /[\s,]+[Oo](?:[Üü]|[Uu]\u0308)\.?\s*$/;
/** Legal forms written without spaces around them in Japanese, Chinese and Korean names: removed wherever they stand. */
const CJK_LEGAL_FORMS = /株式会社|有限会社|合同会社|股份有限公司|有限责任公司|有限責任公司|有限公司|주식회사|유한회사|[(（](?:株|有|주)[)）]|[㈱㈲㈜]/gu;
/** ", The" ending a name is its article moved to the end, as lists sort names ("Home Depot, The" is The Home Depot). */
const INVERTED_THE = /,\s*the\.?\s*$/i;
/** ", N.A." spelt with its comma and dots is a US national bank's legal form after any name ("Bank of America, N.A."). */
const COMMA_NATIONAL_ASSOCIATION = /,\s*N\.\s?A\.?\s*$/i;
/** A US national bank's "N.A." (national association) goes only after a word ending in "bank": "Toyota NA" may be North America. */
const isNationalBankForm = (words: string[]): boolean => words.length > 1 && words.at(-1) === 'na' && words.at(-2)!.endsWith('bank');
/** Marks that are no part of a name: ™ (which NFKD would spell "TM"), ℠, ®, ©. */
const MARKS = /[\u2122\u2120\u00ae\u00a9]/g;
/** ".com" ending a word of a company's name: "Amazon.com, Inc." is Amazon, "salesforce.com" Salesforce. */
const DOT_COM = /(?<=[\p{L}\p{N}])\.com(?![\p{L}\p{N}])/giu;
// Words of a legal form that only go with a suffix after them ("Pvt Ltd", "Private Limited",
// "Sdn Bhd", "GmbH & Co. KG"): "Acme Private" stays a name of its own.
// "Proprietary" is (Pty)'s word, spelt out: "(Proprietary) Limited" (twenty-ninth session).
// "Ges." before "mbH" (thirty-third session, since "mbH" goes alone too): "Acme Ges.m.b.H.".
const SUFFIX_QUALIFIERS = new Set(['and', 'private', 'public', 'proprietary', 'sdn', 'p', 'fz', 'spol', 'cia', 'ges']);
// Legal forms of more than one word, spelt out or abbreviated, after initials were joined
// (joinInitials: "Sp. z o.o." is sp zoo, "S.A. de C.V." sa de cv, "S. de R.L." s de rl).
const SPLIT_SUFFIXES = [
  ['sp', 'zoo'], ['sp', 'z', 'oo'], ['sp', 'k'], ['s', 'de', 'rl'], ['de', 'cv'], ['ges', 'mbh'], ['ug', 'haftungsbeschrankt'], ['partg', 'mbb'],
  ['gesellschaft', 'mit', 'beschrankter', 'haftung'], ['societe', 'anonyme'], ['sociedad', 'anonima'], ['societa', 'per', 'azioni'],
  ['limited', 'liability'], ['limited', 'liability', 'partnership'], ['kabushiki', 'kaisha'],
  // twenty-ninth session (a tester's cases): L.P., G.K. and Y.K. spelt out, and Japan's forms in the
  // other common romanisation of 会社 (gaisha: Kabushiki Gaisha, Yugen Gaisha, Godo Gaisha)
  ['limited', 'partnership'], ['godo', 'kaisha'], ['yugen', 'kaisha'], ['kabushiki', 'gaisha'], ['godo', 'gaisha'], ['yugen', 'gaisha'],
  // fiftieth session (a tester's case): "& Co." in French and Spanish, abbreviated or spelt out
  ['and', 'cie'], ['et', 'cie'], ['and', 'compagnie'], ['et', 'compagnie'], ['y', 'cia'], ['and', 'cia'], ['y', 'compania'],
];

// Latin letters that are not a base letter with an accent, so NFKD leaves them whole: spelt as
// people type them without the letter (Søren → soren, Straße → strasse, Łódź → lodz). Without
// this, names with them sorted after z and missed their ASCII spellings in matching.
const LETTERS: Record<string, string> = { ø: 'o', Ø: 'o', ß: 'ss', ẞ: 'ss', ł: 'l', Ł: 'l', đ: 'd', Đ: 'd', ð: 'd', Ð: 'd', æ: 'ae', Æ: 'ae', œ: 'oe', Œ: 'oe', þ: 'th', Þ: 'th', ı: 'i', ħ: 'h', Ħ: 'h', ŧ: 't', Ŧ: 't', ŋ: 'ng', Ŋ: 'ng', ĸ: 'q' };
const LETTER = /[øØßẞłŁđĐðÐæÆœŒþÞıħĦŧŦŋŊĸ]/g;
// ' ’ ʼ ` ´ ′ and the full-width ＇: inside a word they join its parts, as people type them without
const APOSTROPHES = /['\u2019\u02bc`\u00b4\u2032\uff07]/g;

/**
 * Accents people leave out when they type a name: the combining diacritics of Latin, Greek and
 * Cyrillic letters (é, ü, ί, й), and the vowel points of Hebrew and Arabic. Not the marks that make
 * another letter of an Indic, Thai or Japanese one: कमल (Kamal) and कमला (Kamla), ダン and タン are
 * different names (a tester's false match: until the twenty-fifth session every mark went).
 */
// (the Hebrew points without the punctuation among them: maqaf U+05BE, a hyphen, separates words)
const DIACRITICS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u064b-\u065f\u0670]+/gu;

/**
 * Lower case, accents removed (and the letters above spelt out), apostrophes dropped (McDonald's =
 * McDonalds, O'Brien = OBrien), other punctuation as spaces, spaces collapsed; composed (NFC)
 * again, so that a kana keeps its voicing mark as one letter.
 */
function fold(text: string): string {
  return text
    .replace(INVISIBLE_ALL, '') // a soft hyphen or a zero-width space inside a word shows nothing: "Ac\u200bme" is Acme
    .replace(APOSTROPHES, '') // before NFKD, which makes ´ a space and an accent
    .normalize('NFKD')
    .replace(DIACRITICS, '')
    .replace(LETTER, (c) => LETTERS[c]!)
    .toLowerCase()
    .replace(/&/g, ' and ')
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ')
    .trim()
    .normalize('NFC');
}

/** Company keys computed lately: a feed or an import names the same few thousand companies over and over. */
const companyKeys = new Map<string, string>();
const COMPANY_KEYS_KEPT = 10_000;

/**
 * The company's key with its words apart, as keys were until migration 0042: folded, legal forms
 * (mostly suffixes) and a leading "the" removed. Feed record digests keep this form (tracker.ts
 * recordDigest: the digests people stored before it must still name the same records).
 */
export function companyWordsKey(company: string): string {
  let key = companyKeys.get(company);
  if (key === undefined) {
    key = computeCompanyKey(company);
    if (companyKeys.size >= COMPANY_KEYS_KEPT) companyKeys.clear(); // bounded: start over rather than track recency
    companyKeys.set(company, key);
  }
  return key;
}

/**
 * The matching key of a company name: its words (companyWordsKey) joined without spaces — a name
 * is spelt with a hyphen, a space or neither (Wal-Mart, Walmart; Coca-Cola, Coca Cola;
 * PricewaterhouseCoopers, Price Waterhouse Coopers), and until the thirty-sixth session (migration
 * 0042) only the first two were one company: a tester's "Wal-Mart Stores" → "Walmart Stores" was
 * a job change. (No word holds a space: the words are the folded text split at them.)
 */
export const companyKey = (company: string): string => companyWordsKey(company).replaceAll(' ', '');

/**
 * Initials make one word, however they are written: "L.L.C." = "L.L.C" = "L. L. C." = "LLC", "A. O.
 * Smith" = "A O Smith" = "AO Smith" — a run of two or more one-letter words, after folding. (Where
 * a one-letter word ends a name before a legal form written as initials, foldedWords splits the run
 * before it is joined.)
 */
function joinInitials(words: string[]): string[] {
  const out: string[] = [];
  let run = '';
  for (const w of words) {
    if (w.length === 1 && LONE_LETTER.test(w)) run += w;
    else {
      if (run) out.push(run);
      run = '';
      out.push(w);
    }
  }
  if (run) out.push(run);
  return out;
}
const LONE_LETTER = /^\p{L}$/u;

/**
 * A one-letter word written bare (no dot or slash after it, none before it: not the last letter of
 * "U.S" or of "L.L.C"), then a space or a comma, then a letter with a dot or a slash after it: where
 * the initials that start there may be a legal form written with dots ("Studio X A.G.", "Plan B,
 * N.V.", "Generation Y A/S"; matched just before that letter).
 */
const BARE_LETTER_THEN_DOTTED = /(?<![\p{L}\p{M}\p{N}.\/'\u2019\u02bc`\u00b4\u2032\uff07])\p{L}\p{M}*[\s,]+(?=\p{L}\p{M}*\s*[.\/])/gu;
const HAS_BARE_LETTER_THEN_DOTTED = new RegExp(BARE_LETTER_THEN_DOTTED.source, 'u');

/** Whether words (folded, initials joined) start with a legal form: "ag", "nv", "s de rl". */
const startsWithLegalForm = (words: readonly string[]): boolean =>
  COMPANY_SUFFIXES.has(words[0] ?? '') || SPLIT_SUFFIXES.some((form) => form.every((w, i) => words[i] === w));

const initialsJoined = (text: string): string[] => joinInitials(fold(text).split(' ').filter(Boolean));

/**
 * The words of a company name, folded, initials joined (joinInitials) — except that a one-letter word
 * that ends a name ("Studio X", "Plan B", "Vitamin C") is not glued to a legal form written as
 * initials after it: "Studio X A.G." is "studio x ag", as "Studio X AG" is, not "studio xag" (a
 * tester's false job changes, twenty-ninth session). The letter must be written bare and the form's
 * first letter with a dot or a slash — the way they are written tells the name from the form; bare
 * letters alone ("Studio X A G") do not, and stay one initialism, as do initials written alike
 * ("A. B. C. Corp", "U.S.A."). Splitting the text at a space before folding gives the words the
 * whole text would, since folding works on each character.
 */
function foldedWords(text: string): string[] {
  if (!HAS_BARE_LETTER_THEN_DOTTED.test(text)) return initialsJoined(text);
  const words: string[] = [];
  let from = 0;
  for (const m of text.matchAll(BARE_LETTER_THEN_DOTTED)) {
    const at = m.index + m[0].length;
    if (!startsWithLegalForm(initialsJoined(text.slice(at)))) continue;
    words.push(...initialsJoined(text.slice(from, at)));
    from = at;
  }
  words.push(...initialsJoined(text.slice(from)));
  return words;
}

function computeCompanyKey(company: string): string {
  const upright = company.replace(INVERTED_THE, '');
  // (a name that is only ", The" keeps it, as one that is only a legal form does)
  const plain = (HAS_LETTER_OR_DIGIT.test(upright) ? upright : company).replace(MARKS, ' ').replace(DOT_COM, '').replace(COMMA_NATIONAL_ASSOCIATION, '').replace(ESTONIAN_OU, '');
  const withoutCjkForm = plain.replace(CJK_LEGAL_FORMS, ' ');
  // a name that is only a legal form keeps it, as "Inc" alone does
  const words = foldedWords(HAS_LETTER_OR_DIGIT.test(withoutCjkForm) ? withoutCjkForm : plain);
  // a legal form opening the name goes first, so that a suffix is never dropped down to it alone:
  // "The Company", "The Limited" and "The Co" were all "the", one company (a tester's case)
  if (words.length > 1 && COMPANY_PREFIXES.has(words[0]!)) words.shift();
  let popped = false;
  while (words.length > 1) {
    const last = words[words.length - 1]!;
    // a form of more words first: "y Cía" goes whole, where its "Cía" alone (a qualifier after
    // "Ltda.") left the "y" ("Acme y Cía. Ltda." was "acmey")
    const split = SPLIT_SUFFIXES.find((form) => words.length > form.length && form.every((w, i) => words[words.length - form.length + i] === w));
    if (split) words.length -= split.length;
    else if (COMPANY_SUFFIXES.has(last) || (popped && SUFFIX_QUALIFIERS.has(last)) || isNationalBankForm(words)) words.pop();
    else break;
    popped = true;
  }
  return words.join(' ');
}

/** The matching key of a person's name: folded. */
export const nameKey = (name: string): string => fold(name);

/**
 * Short forms of given names that do not begin the name they stand for (those that do — Chris,
 * Alex, Sam, Tom — fit by their beginning), one name and its forms a line: Bob is Robert.
 */
const NAME_FORMS: readonly string[] = [
  'robert rob bob bobby robbie bert',
  'william will bill billy willy liam',
  'richard rich dick rick ricky',
  'james jim jimmy jamie',
  'john jack johnny',
  'margaret peggy maggie meg marge greta',
  'elizabeth liz lizzie beth betty betsy eliza libby bess elisabeth',
  'edward ted teddy ned ed eddie eddy',
  'theodore ted teddy',
  'anthony tony',
  'charles chuck charlie',
  'henry hank harry',
  'harold harry hal',
  'katherine catherine kathryn kate kathy katie cathy kat',
  'michael mike mikey mick',
  'andrew andy drew',
  'david dave davy',
  'joseph joe joey',
  'stephen steven steve',
  'susan sue susie',
  'patricia pat patty trish',
  'patrick pat paddy',
  'lawrence laurence larry',
  'gerald jerry',
  'jeremy jerry',
  'alexander alexandra sasha sandy',
  'sarah sally sadie',
  'mary molly polly',
  'rebecca becky',
  'deborah debbie',
  'victoria vicky tori',
  'abigail abby',
  'dorothy dot dottie',
  'frances francis frank fran',
  // forty-fifth session, a feeds tester's pairs that share an address and never matched
  'cynthia cindy',
  'gillian jillian jill',
  'alfred fred freddie freddy alf',
  'frederick fred freddie freddy',
  'leonard len lenny leo',
  'nathan nathaniel nate',
  'gabriel gabe',
  'theresa teresa tess tessa tessie terry',
  'ellen eleanor helen nell nellie',
  'virginia ginny',
  'josephine jo josie',
  'christine christina tina',
  'martin marty',
  'isabel isabella izzy bella',
  'muhammad mohammed mohammad mohamed mohamad muhammed',
  // pet forms that end in y or ie and begin their names (forty-seventh session: no longer guessed)
  'thomas tommy',
  'jennifer jenny jen jenn',
  'daniel danny',
  'samuel sammy',
  'samantha sammy sam',
  'kenneth kenny',
  'jerome jerry',
  'sandra sandy',
  'timothy timmy tim',
  'benjamin benny ben',
  'donald donny don',
  'ronald ronnie ronny ron',
  'stephen steven stevie',
  'matthew matty matt',
  'jessica jessie jess',
  'jacqueline jackie',
  'anne ann annie',
  'penelope penny',
  'terence terrence terry',
  'nicholas nicky nick',
  'zachary zach zack',
  'christopher chrissy',
  'kimberly kimmy kim',
];
const FORMS_OF = new Map<string, Set<string>>();
for (const line of NAME_FORMS) {
  const forms = line.split(' ');
  for (const f of forms) {
    const known = FORMS_OF.get(f) ?? new Set<string>();
    for (const g of forms) known.add(g);
    FORMS_OF.set(f, known);
  }
}
/**
 * A given name as its spellings agree: ph as f, no h after a consonant or before one (Tomas,
 * Thomas; Jon, John; Sara, Sarah), ck as c (Nick, Nicholas), y between two letters as i (Bryan,
 * Brian), a doubled letter once (Phillip, Philip).
 */
const spelled = (w: string) =>
  w
    .replace(/ph/g, 'f')
    .replace(/(?<=[^aeiouy])h|h(?![aeiouy])/g, '')
    .replace(/ck/g, 'c')
    .replace(/(?<=.)y(?=.)/g, 'i')
    .replace(/(.)\1+/g, '$1');
/**
 * Endings that make another person's name of a name (Paul, Paula; Louis, Louise; Daniel,
 * Danielle; Joseph, Josephine; Stephan, Stephanie; Emil, Emily): a name of four letters or more with one of
 * them is not the same name shortened.
 */
const OTHER_NAME_ENDINGS = new Set(['a', 'e', 'y', 'ie', 'la', 'le', 'ina', 'ine', 'ette', 'etta', 'elle']);
/** `short` begins `long` as a short form or an initial does (Chris, Christopher; J, John), not as Paul begins Paula. */
const begins = (short: string, long: string) => long.startsWith(short) && !(short.length >= 4 && OTHER_NAME_ENDINGS.has(long.slice(short.length)));
const VOWEL = /[aeiouy]/;
/**
 * Two spellings, of four letters or more, one vowel apart after the first syllable and before the
 * last letter: Kristen, Kristin; Katharine, Katherine; Allan, Allen. Not Julian and Jillian, Darren and Doreen
 * (the first syllable), nor Maria and Mario, Francesca and Francesco (the last letter).
 */
function oneVowelApart(a: string, b: string): boolean {
  if (a.length !== b.length || a.length < 4) return false;
  let at = -1;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (at >= 0) return false;
    at = i;
  }
  if (at < 0 || at === a.length - 1 || !VOWEL.test(a[at]!) || !VOWEL.test(b[at]!)) return false;
  return /[^aeiouy]/.test(a.slice(a.search(VOWEL) + 1, at)); // a consonant between the first vowel and the difference
}

/**
 * One word of a name fits another: the same, one begins the other (an initial, a short form:
 * `begins`), as spelled too (Jon, John; Tom, Thomas), a form of it (NAME_FORMS: Bob, Robert;
 * Tommy, Thomas), or another spelling of it one vowel apart (oneVowelApart). Pet forms that end
 * in y or ie are listed in NAME_FORMS, not guessed: a stem guessed from Mary, Carrie or Sally begins
 * Mark, Carl and Salvatore (a reviewer's pairs, forty-seventh session).
 */
function wordsFit(w: string, o: string): boolean {
  if (begins(w, o) || begins(o, w) || FORMS_OF.get(w)?.has(o) === true) return true;
  const [a, b] = [spelled(w), spelled(o)];
  return begins(a, b) || begins(b, a) || oneVowelApart(a, b);
}

/**
 * Whether two names (their keys, nameKey) may name one person: every word of the name with fewer
 * words is a word of the other, or begins one or is begun by it, or is a short form of it
 * (NAME_FORMS) — each word of the other taken once, in any order. Initials, a middle name, a
 * degree and short forms fit ("J Smith" and "John Smith", "Ann Lee" and "Ann B Lee, MBA",
 * "Chris Doe" and "Christopher Doe", "Bob Roe" and "Robert Roe", "Lee, Ann"); "Bob Stone" and
 * "Alice Stone" do not. E-mail matches ask it: a shared info@ address names several people (tracking.md).
 */
export function namesFit(a: string, b: string): boolean {
  if (a === b) return true;
  const [x, y] = [a.split(' '), b.split(' ')];
  const [fewer, others] = x.length <= y.length ? [x, y] : [y, x];
  const free = [...others];
  const take = (i: number) => i >= 0 && free.splice(i, 1).length === 1;
  // whole words first, so that "A Ann" fits "Ann Amy" (the initial takes Amy, not Ann)
  const rest = fewer.filter((w) => !take(free.indexOf(w)));
  return rest.every((w) => take(free.findIndex((o) => wordsFit(w, o))));
}
