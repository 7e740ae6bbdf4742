/**
 * Canonical forms used for storage and matching (SPEC §4.1, §5). Pure functions, no I/O: they run
 * in the request path, in the import runner and in the CSV worker thread alike.
 */

const LINKEDIN_HOST = /^(?:[a-z]{2,3}\.|www\.|mobile\.)?linkedin\.com$/;
const SLUG = /^[\p{L}\p{N}_-]{1,100}$/u;

/**
 * `https://www.linkedin.com/in/<slug>` for any spelling of a LinkedIn profile URL (scheme or not,
 * country or mobile subdomain, trailing slash, query, fragment, upper case, percent-encoding);
 * undefined when the text is not a profile URL. The slug is stored decoded and lower-cased.
 */
export function canonicalLinkedin(input: string): string | undefined {
  let text = input.trim();
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
  if (parts.length !== 2 || parts[0]!.toLowerCase() !== 'in') return undefined;
  let slug: string;
  try {
    slug = decodeURIComponent(parts[1]!).toLowerCase();
  } catch {
    return undefined;
  }
  if (!SLUG.test(slug)) return undefined;
  return `https://www.linkedin.com/in/${slug}`;
}

/** The slug of a canonical LinkedIn URL (the matching key of §5). */
export const linkedinSlug = (canonical: string): string => canonical.slice('https://www.linkedin.com/in/'.length);

const EMAIL = /^[^\s@<>(),;:"[\]]+@[^\s@<>(),;:"[\]]+\.[^\s@<>(),;:"[\]]+$/;

/** True for a plausible single e-mail address (the shape, not deliverability). */
export const isEmail = (text: string): boolean => EMAIL.test(text);

export const TITLE_LEVELS = ['c_suite', 'vp', 'director', 'manager', 'staff', 'intern'] as const;
export const TITLE_DOMAINS = ['engineering', 'sales', 'marketing', 'finance', 'people', 'operations', 'product', 'legal', 'other'] as const;
export type TitleLevel = (typeof TITLE_LEVELS)[number];
export type TitleDomain = (typeof TITLE_DOMAINS)[number];

// Ordered: the first rule that matches wins. Words are matched on whole-word boundaries.
const LEVEL_RULES: [TitleLevel, RegExp][] = [
  ['intern', /\b(intern|internship|trainee|apprentice|werkstudent)\b/],
  ['c_suite', /\b(chief|ceo|cto|cfo|coo|cmo|cio|ciso|cpo|cro|chro|founder|co-founder|cofounder|president|owner|managing director|managing partner|general manager)\b/],
  ['vp', /\b(vp|svp|evp|avp|vice president|vice-president)\b/],
  ['director', /\b(director|head|principal)\b/],
  ['manager', /\b(manager|lead|leader|supervisor|team lead|teamlead)\b/],
];

const DOMAIN_RULES: [TitleDomain, RegExp][] = [
  ['legal', /\b(legal|counsel|attorney|lawyer|paralegal|compliance)\b/],
  ['people', /\b(hr|chro|people|talent|recruit\w*|human resources|personnel)\b/],
  ['finance', /\b(cfo|finance|financial|accounting|accountant|controller|treasur\w*|tax|audit\w*)\b/],
  ['marketing', /\b(cmo|marketing|brand|growth|content|seo|communications|pr)\b/],
  ['sales', /\b(cro|sales|account executive|account manager|business development|bdr|sdr|revenue|customer success)\b/],
  ['product', /\b(cpo|product|ux|ui|designer|design)\b/],
  ['engineering', /\b(cto|ciso|cio|engineer\w*|developer|software|devops|sre|architect|technology|technical|it|data|security|programmer|scientist|qa)\b/],
  ['operations', /\b(coo|operations|ops|supply chain|logistics|procurement|facilities|office manager)\b/],
];

/** Seniority inferred from a job title; undefined without a title. */
export function titleLevel(title: string | undefined): TitleLevel | undefined {
  if (!title) return undefined;
  const t = title.toLowerCase();
  for (const [level, re] of LEVEL_RULES) if (re.test(t)) return level;
  return 'staff';
}

/** Function inferred from a job title; undefined without a title. */
export function titleDomain(title: string | undefined): TitleDomain | undefined {
  if (!title) return undefined;
  const t = title.toLowerCase();
  for (const [domain, re] of DOMAIN_RULES) if (re.test(t)) return domain;
  return 'other';
}

// Legal-form suffixes dropped from company names for matching ("Acme, Inc." = "ACME").
const COMPANY_SUFFIXES = new Set([
  'inc', 'incorporated', 'llc', 'llp', 'lp', 'ltd', 'limited', 'corp', 'corporation', 'co', 'company', 'gmbh', 'ag', 'kg', 'ug',
  'plc', 'sa', 'sas', 'sarl', 'srl', 'spa', 'bv', 'nv', 'oy', 'ab', 'as', 'asa', 'aps', 'pty', 'pte', 'kk', 'sl', 'se', 'sro',
]);

/** Lower case, accents removed, punctuation as spaces, spaces collapsed. */
function fold(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/&/g, ' and ')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** The matching key of a company name: folded, legal-form suffixes and a leading "the" removed. */
export function companyKey(company: string): string {
  const words = fold(company.replace(/\b([a-z])\.(?=[a-z]\.)/gi, '$1')).split(' ').filter(Boolean);
  // "GmbH & Co. KG": suffixes joined by "and" go too
  let popped = false;
  while (words.length > 1 && (COMPANY_SUFFIXES.has(words[words.length - 1]!) || (popped && words[words.length - 1] === 'and'))) {
    words.pop();
    popped = true;
  }
  if (words.length > 1 && words[0] === 'the') words.shift();
  return words.join(' ');
}

/** The matching key of a person's name: folded. */
export const nameKey = (name: string): string => fold(name);
