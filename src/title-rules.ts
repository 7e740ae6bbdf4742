/**
 * titleLevel and titleDomain (SPEC §4.1) inferred from a job title by a rule table: the title is
 * folded (lower case, accents removed, punctuation as spaces, abbreviations spelled out), then the
 * ordered rules below are tried and the first that matches wins. docs/tracking.md, "Title level
 * and domain", explains the table, its precedence and the decisions; test/fixtures/titles.tsv holds
 * the titles it is proven on. Contacts store what the rules said: a change of the rules goes with a
 * migration that recomputes it (as 0028 does, through the SQL functions src/storage/migrate.ts gives).
 *
 * Imports call this once per row (a million rows per file), so everything is compiled once here:
 * a call folds the title (a few short strings) and runs precompiled regular expressions over it.
 * Pure, no I/O: it runs in the request path, the import runner and the CSV worker alike.
 */

import { HAS_LETTER_OR_DIGIT } from './normalize.ts';
import { regExpLiteral } from './regexp-literal.ts';

export const TITLE_LEVELS = ['c_suite', 'vp', 'director', 'manager', 'staff', 'intern'] as const;
export const TITLE_DOMAINS = ['engineering', 'sales', 'marketing', 'finance', 'people', 'operations', 'product', 'legal', 'other'] as const;
export type TitleLevel = (typeof TITLE_LEVELS)[number];
export type TitleDomain = (typeof TITLE_DOMAINS)[number];

/**
 * Abbreviations spelled out after folding, whole words only, in one pass (an expansion is not
 * expanded again). Keys are folded text: "Sr." is "sr", "M&A" is "m a", "V.P." is "v p".
 * Ambiguous ones take the meaning most common in business titles (docs/tracking.md).
 */
export const TITLE_ABBREVIATIONS: Readonly<Record<string, string>> = {
  // seniority and rank
  sr: 'senior', snr: 'senior', jr: 'junior', jnr: 'junior', asst: 'assistant', assoc: 'associate', exec: 'executive',
  mgr: 'manager', mngr: 'manager', mgmt: 'management', dir: 'director', dept: 'department', intl: 'international',
  vp: 'vice president', 'v p': 'vice president', svp: 'senior vice president', evp: 'executive vice president',
  avp: 'assistant vice president', rvp: 'regional vice president', gvp: 'group vice president', vpoe: 'vice president engineering',
  md: 'managing director', gm: 'general manager', cos: 'chief of staff', ea: 'executive assistant', pa: 'personal assistant',
  // chief officers (cpo, cco, cso, cao are ambiguous: the choice is documented)
  ceo: 'chief executive officer', cto: 'chief technology officer', cfo: 'chief financial officer', coo: 'chief operating officer',
  cmo: 'chief marketing officer', cio: 'chief information officer', ciso: 'chief information security officer',
  cpo: 'chief product officer', cro: 'chief revenue officer', chro: 'chief human resources officer', cdo: 'chief data officer',
  cco: 'chief commercial officer', cso: 'chief strategy officer', clo: 'chief legal officer', cao: 'chief administrative officer',
  cbo: 'chief business officer', cgo: 'chief growth officer', cxo: 'chief experience officer', caio: 'chief ai officer',
  cpto: 'chief product and technology officer',
  // engineering
  eng: 'engineering', engr: 'engineer', engg: 'engineering', swe: 'software engineer', sde: 'software development engineer',
  sdet: 'software development engineer in test', sre: 'site reliability engineer', mts: 'member of technical staff',
  dev: 'developer', tech: 'technical', sys: 'system', sysadmin: 'system administrator', admin: 'administrator',
  dba: 'database administrator', ml: 'machine learning', bi: 'business intelligence', qa: 'quality assurance', 'r d': 'research and development',
  // product
  pm: 'product manager', apm: 'associate product manager', gpm: 'group product manager', pmm: 'product marketing manager',
  po: 'product owner', tpm: 'technical program manager', pmo: 'project management office',
  // sales and marketing
  ae: 'account executive', acct: 'account', kam: 'key account manager', tam: 'technical account manager',
  bd: 'business development', bizdev: 'business development', 'bus dev': 'business development', 'biz dev': 'business development', biz: 'business', bdr: 'business development representative',
  bdm: 'business development manager', sdr: 'sales development representative', isr: 'inside sales representative',
  rsm: 'regional sales manager', asm: 'area sales manager', rep: 'representative', cs: 'customer success',
  csm: 'customer success manager', revops: 'revenue operations', salesops: 'sales operations', mktg: 'marketing',
  mkt: 'marketing', pr: 'public relations',
  // people, finance, legal, operations
  hr: 'human resources', hrbp: 'human resources business partner', hrd: 'human resources director', hrm: 'human resources manager',
  peopleops: 'people operations', 'l d': 'learning and development', 'fp a': 'financial planning and analysis',
  'm a': 'mergers and acquisitions', cpa: 'certified public accountant', gc: 'general counsel', agc: 'associate general counsel',
  dpo: 'data protection officer', legalops: 'legal operations', ops: 'operations', bizops: 'business operations',
  // French, Spanish, German
  pdg: 'president directeur general', dg: 'directeur general', drh: 'directeur ressources humaines',
  daf: 'directeur administratif financier', dsi: 'directeur systemes information', rh: 'ressources humaines', rrhh: 'recursos humanos', gf: 'geschaftsfuhrer',
};

// "CEO's Assistant", "Vice President's Executive Assistant" (not "Teacher's Assistant")
const EXECUTIVE_S_ASSISTANT = '(?:officer|president|founder|director|chairman|chairwoman|chair|partner|owner|head) s (?:executive |personal )?assistant';
// "CEO Assistant", "VP Sales Assistant": an executive's title with "Assistant" ending it (not
// "Vice President, Assistant Controller", where the assistant is the second role)
const EXECUTIVE_ASSISTANT =
  '(?:chief (?:\\w+ )+officer|president|co ?founder|founder|chairman|chairwoman|chairperson|managing director|general manager|owner|partner|vice president(?: \\w+){0,3}) assistant(?= ?$)';

// "Partner" is an owner ("Managing Partner", "Partner, Tax"), except as part of a role name:
// after these words ("HR Business Partner", "Talent Partner") or before these ("Partner Manager").
const PARTNER_AS_ROLE_AFTER = [
  'business', 'channel', 'alliances?', 'strategic', 'technology', 'ecosystem', 'reseller', 'referral', 'implementation', 'delivery',
  'talent', 'acquisition', 'people', 'recruiting', 'learning', 'development', 'sourcing', 'training', 'client', 'customer', 'finance',
  'success', 'solutions', 'limited',
];
const PARTNER_AS_ROLE_BEFORE = [
  'manager', 'management', 'marketing', 'success', 'sales', 'accounts?', 'development', 'engineer', 'engineering', 'relations',
  'relationships?', 'programs?', 'programme', 'operations', 'solutions', 'enablement', 'lead', 'specialist', 'executive',
  'integrations?', 'support', 'network', 'alliances', 'ecosystem', 'experience', 'onboarding', 'recruit\\w*', 'coordinator',
  'consultant', 'analyst', 'representative', 'channel', 'technology', 'partnerships?',
];

/**
 * "Chair" alone is the board's chair: a title of nothing else ("Chair", "Co-Chair", "Interim
 * Chair"), or one that names the board ("Chair, Board of Directors", "Board of Trustees Chair";
 * not "Advisory Board Chair": an advisory board advises, it does not govern).
 * Elsewhere it may chair anything — an academic department (a head of department: director,
 * DEPARTMENT_CHAIR), a committee, a conference session, an endowed professorship — and the other
 * words decide. Chairman, chairwoman and chairperson are the board's wherever they stand.
 */
const BOARD_CHAIR = [
  // (the whole title; the lookbehind after the word keeps it among the words grouped by first letter)
  ...['chair', 'cochair'].map((w) => `${w}(?= ?$)(?<=^ ?(?:(?:co|vice|deputy|executive|non executive|independent|interim|acting) )*${w})`),
  // not an advisory board's, as for its members
  'chair (?:of )?(?:the )?board', '(?<!advisory )board (?:of \\w+ )?chair', 'executive chair',
];
/** What a vice chair may be of, besides the board: "Vice Chair, Department of Radiology" is no executive. */
const NOT_THE_BOARD = '(?:department|division|faculty|committee|subcommittee|program|programme|conference|session|track|panel|council)';
/** A department's or division's chair is its head, as a department head is: "Department Chair", "Chair of the Math Department". */
const DEPARTMENT_CHAIR = [
  '(?:department|division) (?:(?:vice|co|deputy|associate) )?chair', 'chair (?:of )?(?:the )?(?:\\w+ ){0,3}?(?:department|division)',
];

type Rule<T> = readonly [value: T, words: readonly string[], why: string];

/**
 * Seniority, tried in order; the first rule with a matching word wins, none gives `staff`.
 * Each word is a regular-expression fragment matched on whole words of the folded title; one that
 * starts with `*` may also end a compound word ("*leiter": "Leiter", "Vertriebsleiter").
 */
export const LEVEL_RULES: readonly Rule<TitleLevel>[] = [
  ['intern', [
    'intern(?:s|ships?)?(?! (?:program|programme|coordinator|manager|recruit\\w*|director|lead)\\b)',
    'trainees?', 'apprentices?', 'apprenticeship', 'working student', 'summer (?:associate|analyst)', 'co op', 'coop student',
    'werkstudent\\w*', 'praktikant\\w*', 'auszubildende\\w*', 'azubi', 'stagiaire', 'stagiair', 'alternante?', 'becari[oa]',
    'pasante', 'estagiari[oa]', 'tirocinante', 'stagista',
  ], 'an intern is an intern whatever else the title says ("Intern to the CEO")'],
  ['staff', [
    'assistant (?:to|of)', '(?:executive|personal|administrative|administrator|office) assistant', 'executive secretary', 'secretary to',
    EXECUTIVE_S_ASSISTANT, EXECUTIVE_ASSISTANT, 'founders? s associate', 'founders associate', 'owners? s representative',
  ], 'assistants to executives are not executives ("Executive Assistant to the CEO", "CEO\'s Assistant"); an owner\'s representative works for the owner'],
  ['manager', [
    '(?:chief (?:\\w+ )+officer|president|chairman|founder|owner|partner) (?:s )?office manager',
  ], 'the manager of an executive\'s office is a manager ("CEO Office Manager", "President\'s Office Manager")'],
  ['director', [
    'chief of staff', 'associate partner', '(?:associate|assistant|deputy) general counsel',
  ], 'titles that contain a c-suite word but rank below it'],
  ['c_suite', [
    'chief', 'founders?', 'co ?founders?', 'founding (?:partner|member)',
    'president(?<!vice president)', 'presidente(?<!vice presidente)', 'prasident(?:in)?',
    // not "Product Owner", "Process Owner", …
    'owners?(?<!(?:product|process|service|systems?|data|platform|account|budget|content|risk|control) owners?)', 'co owners?',
    'proprietor', 'managing director', 'managing member', 'general counsel',
    `partner(?<!(?:${PARTNER_AS_ROLE_AFTER.join('|')}) partner)(?! (?:${PARTNER_AS_ROLE_BEFORE.join('|')})\\b)`,
    'chairman', 'chairwoman', 'chairperson', ...BOARD_CHAIR,
    `vice chair\\w*(?<!\\b${NOT_THE_BOARD}\\b.*)(?!.*\\b${NOT_THE_BOARD}\\b)`,
    // not an advisory board's: its members advise, they do not govern
    '(?<!advisory )board (?:member|director)', 'member of the board', 'non executive director',
    // de, fr, es, pt, it, nl
    'gesch(?:a|ae)ftsf(?:u|ue)hr\\w*', 'gesellschafter\\w*', 'vorstand\\w*', 'aufsichtsrat\\w*', 'inhaber\\w*', 'gr(?:u|ue)nder\\w*', 'mitgr(?:u|ue)nder\\w*',
    'fondat(?:eur|rice|ore)s?', 'co ?fondat(?:eur|rice|ore)s?', 'gerante?', 'directeur general', 'directrice generale',
    'fundador(?:a|es)?', 'co ?fundador(?:a|es)?', 'socio', 'socia', 'dueno', 'duena', 'propietari[oa]', 'proprietari[oa]', 'consejer[oa] delegad[oa]',
    'directora? general', 'gerente general', 'gerente geral', 'diretora? (?:geral|executiv[oa])', 'amministratore delegato',
    'direttore generale', 'titolare', 'algemeen directeur', 'eigenaar', 'oprichter', 'mede ?oprichter',
  ], 'chief officers, founders, owners, presidents, partners, boards, managing directors and general counsel'],
  ['vp', [
    'vice president\\w*', 'vicepresident\\w*', 'vice presidente', 'vizeprasident\\w*',
  ], '"vice president" (president alone is c-suite)'],
  ['manager', [
    'teamleiter(?:in)?', 'gruppenleiter(?:in)?', 'projektleiter(?:in)?', 'schichtleiter(?:in)?',
  ], 'German team and project leads (before the "…leiter" director rule)'],
  ['director', [
    'directors?', 'directora', 'directeur', 'directrice', 'direttore', 'direttrice', 'diretor', 'diretora', 'direktor\\w*',
    'head', 'general manager', '*leiter(?:in|innen)?', '*leitung', 'prokurist\\w*', ...DEPARTMENT_CHAIR,
  ], 'directors, heads of, general managers, a department\'s chair'],
  ['manager', [
    '*manager(?:in|innen|s)?', 'lead(?! gen\\w*)', 'leader', '*leiders?', 'supervisor', 'superintendent', 'foreman', 'forewoman',
    'gerente', 'responsable', 'responsabile', 'jef[ea]', 'encargad[oa]', 'chef de', 'gestor(?:a)?',
  ], 'managers, leads, supervisors'],
];

/**
 * Function, tried in order; the first rule with a matching word wins, none gives `other`. When a
 * title names two functions the earlier rule wins ("VP Sales & Marketing" is sales).
 */
export const DOMAIN_RULES: readonly Rule<TitleDomain>[] = [
  ['operations', [
    'assistant (?:to|of)', '(?:executive|personal|administrative|administrator|office) assistant', 'executive secretary', 'secretary to',
    EXECUTIVE_S_ASSISTANT, EXECUTIVE_ASSISTANT, 'founders? s associate', 'founders associate', 'office (?:manager|administrator|coordinator|assistant|clerk)',
    'receptionist', 'front desk', 'chief of staff', 'data entry', 'assistante? de direction', 'assistente di direzione',
  ], 'support of executives and the office: operations, whatever executive it names'],
  ['legal', [
    'legal\\w*', 'counsel', 'attorneys?', 'lawyers?', 'law', 'paralegal', 'compliance', 'solicitor', 'barrister', 'notary',
    'company secretary', 'contracts', 'contract (?:manager|management|specialist|administrator|administration|negotiator|analyst)',
    'data protection', 'privacy', 'regulatory', 'juriste?', 'juridique', 'juridic[oa]', 'avocat',
    'abogad[oa]', 'advogad[oa]', 'avvocato', 'rechtsanw\\w*', 'syndikus\\w*', 'notar\\w*',
  ], 'legal and compliance'],
  ['people', [
    'human resources?', 'people', 'talent', 'recruit\\w*', 'sourcer', 'headhunter', 'personnel', 'hris', 'learning (?:and )?development',
    'compensation', 'benefits', 'employee (?:experience|relations)', 'employer brand\\w*', 'diversity', 'workforce',
    'ressources humaines', 'recursos humanos', 'risorse umane', 'recrut\\w*', 'reclut\\w*',
    'personal(?:leiter|referent|entwickl|sachbearbeit|betreu|chef|wesen|abteilung|manager|recruit)\\w*',
    'personal(?! (?:assistant|trainer|banker|shopper|care|chef|stylist|loan))',
  ], 'human resources, recruiting, people operations'],
  ['finance', [
    'financ\\w*', 'accounting', 'accountants?', 'accounts (?:payable|receivable)', 'bookkeep\\w*', '(?<!(?:traffic|flight|mission|game|motion) )controller', 'comptroller',
    'controlling', 'treasur\\w*', 'tax', 'audit\\w*', 'payroll', 'investor relations', 'mergers and acquisitions', 'corporate development',
    'actuar\\w*', 'underwrit\\w*', 'credit', 'billing',
    'finanz\\w*', 'buchhalt\\w*', 'steuer\\w*', 'wirtschaftsprufer\\w*', 'comptab\\w*', 'contab\\w*', 'contador\\w*', 'fiscal\\w*',
    'tresor\\w*', 'tesorer\\w*',
  ], 'finance, accounting, tax, audit'],
  ['sales', [
    'sales', 'sales(?:person|people|man|men|woman|women)', 'presales', 'pre sales', 'business develop\\w*',
    'account (?:executive|manager\\w*|management|director|representative|lead)', 'accountmanager\\w*', 'customer success',
    'revenue(?! marketing)', 'commercial\\w*', 'partnerships?', 'partner (?:manager|success|management|development|sales|account)',
    'client partner', 'channel(?! marketing)', 'alliances?', 'solutions consultant',
    'realtor', 'real estate (?:agent|broker|advisor|consultant|salesperson)', 'insurance (?:agent|broker|advisor)', 'leasing (?:agent|consultant)',
    'comercial', 'commercieel', 'ejecutiv[oa] de (?:cuentas|ventas)',
    'ventas?', 'ventes?', 'vendas', 'vendite', 'vend(?:edor|edora|eur|euse)', 'vertrieb\\w*', 'verkauf\\w*', 'verkoop\\w*', 'verkoper\\w*',
  ], 'sales, account management, business development, customer success, revenue operations'],
  ['marketing', [
    'marketing', 'marketer\\w*', 'brand\\w*', 'growth', 'content(?! design\\w*)', 'seo', 'sem', 'communications?', 'public relations',
    'demand gen\\w*', 'lead gen\\w*', 'social media', 'copywrit\\w*', 'community', 'events?', 'advertising', 'media buyer',
    'creative', 'art director', 'editor\\w*', 'editorial', 'journalist', 'reporter',
    'mercadeo', 'mercadotecnia', 'comunicaci\\w*', 'kommunikation', 'werbung',
  ], 'marketing, brand, growth, content, communications'],
  ['product', [
    'product (?:manager|management|owner|designer|design|analyst|lead|director|head)', 'designer',
    'chef de produit', 'produktmanager\\w*',
  ], 'product roles (before engineering: "Technical Product Manager" is product)'],
  ['engineering', [
    'engineer\\w*', 'developer\\w*', 'software', 'devops', 'devsecops', 'secops', 'mlops', 'dataops',
    'site reliability', 'architect\\w*', 'technolog\\w*', 'technical', 'it', 'information (?:technology|security|systems?)',
    'chief information', 'data', 'analytics', 'security', 'cyber\\w*', 'programmer', 'scientist', 'quality assurance', 'tester', 'test',
    'machine learning', 'ai', 'artificial intelligence', 'cloud', 'infrastructure', 'network', 'systems? (?:administrator|analyst|engineer)',
    'database\\w*', 'business intelligence', 'research and development', 'firmware', 'embedded', 'hardware', 'web',
    'front ?end', 'back ?end', 'full ?stack', 'mobile', 'ios', 'android', 'help ?desk', 'service desk', 'scrum', 'agile',
    'ingenieu?r\\w*', 'ingeniero\\w*', 'ingeniera', 'ingegner\\w*', 'engenheir\\w*', '*entwickler(?:in|innen)?', 'developpeu\\w*', 'desarrollador\\w*',
    'sviluppator\\w*', 'desenvolvedor\\w*', 'programador\\w*', 'informati\\w*', 'tecnolog\\w*', 'technique', 'technisch\\w*',
    'tecnic[oa]', 'sistemas?', 'sistemi', 'systeme', 'de ti', // Spanish and Portuguese IT (tecnologías de la información)
  ], 'engineering, IT, data, security'],
  ['product', [
    'products?', 'produit', 'producto', 'produkt\\w*', 'prodotto', 'ux', 'ui', 'user (?:experience|research\\w*)', 'design\\w*',
  ], 'product and design as a qualifier ("Head of Product", "UX Researcher")'],
  ['finance', [
    'risk', 'investment\\w*', 'banking', 'banker', 'bank', 'wealth', 'portfolio', 'economist', 'loans?', 'lending', 'mortgage',
    'private equity', 'venture capital', 'hedge fund', 'asset management', 'capital markets', 'equity research', 'trader', 'trading',
  ], 'weaker finance words, after engineering ("Security Risk Analyst" is engineering)'],
  ['operations', [
    'operations?', 'operating', 'operational', 'opera(?:ciones|coes|zioni)', 'supply chain', 'logisti\\w*', 'procurement', 'purchasing',
    'buyer', 'facilities', 'facility', 'warehouse', 'fulfil\\w*', 'inventory', 'manufacturing', 'production', 'plant', 'quality',
    'fleet', 'dispatch\\w*', 'projects?', 'program', 'programme', '(?:customer|client) (?:services?|support|care|experience)',
    '(?:call|contact) cent(?:er|re)', 'support', 'administrative', 'administration', 'secretary', 'implementation', 'delivery',
    'category (?:manager|management|lead)', 'workplace',
    'projekt\\w*', 'projets?', 'proyectos?', 'progett[oi]', 'projetos?', 'einkauf\\w*', 'achats?', 'acheteu\\w*', 'compras', 'acquisti',
    'kundenservice', 'kundendienst', 'kundenbetreuung',
  ], 'operations, supply chain, procurement, projects, customer service'],
];

// ---- compiled once ----------------------------------------------------------------------------

/**
 * `w1|w2|…` with the words that start with the same letter grouped (`c(?:hief|hairman)`): the
 * engine then tries one branch per position instead of every word (a third less time). Which
 * alternative matches first does not change whether the expression matches.
 */
function alternation(words: readonly string[]): string {
  const byLetter = new Map<string, string[]>();
  const rest: string[] = [];
  for (const w of words) {
    if (/^[a-z](?![?*+{])/.test(w)) byLetter.set(w[0]!, [...(byLetter.get(w[0]!) ?? []), w.slice(1)]);
    else rest.push(w);
  }
  const grouped = [...byLetter].map(([letter, tails]) => (tails.length === 1 ? letter + tails[0] : `${letter}(?:${tails.join('|')})`));
  return [...grouped, ...rest].join('|');
}

interface Compiled<T> {
  values: readonly T[];
  patterns: readonly RegExp[];
}

function compile<T>(rules: readonly Rule<T>[]): Compiled<T> {
  const patterns = rules.map(([, words]) => {
    const whole = words.filter((w) => !w.startsWith('*'));
    const endings = words.filter((w) => w.startsWith('*')).map((w) => w.slice(1));
    const source = [whole.length ? `\\b(?:${alternation(whole)})\\b` : '', endings.length ? `(?:${alternation(endings)})\\b` : ''];
    return new RegExp(source.filter(Boolean).join('|'));
  });
  return { values: rules.map(([value]) => value), patterns };
}

const LEVELS = compile(LEVEL_RULES);
const DOMAINS = compile(DOMAIN_RULES);

const ABBREVIATION_SOURCE = `\\b(?:${alternation(Object.keys(TITLE_ABBREVIATIONS).sort((a, b) => b.length - a.length).map(regExpLiteral))})\\b`;
const HAS_ABBREVIATION = new RegExp(ABBREVIATION_SOURCE);
const ABBREVIATION = new RegExp(ABBREVIATION_SOURCE, 'g');
const expand = (word: string): string => TITLE_ABBREVIATIONS[word] ?? word;

const NON_ASCII = /[^\x00-\x7f]/;
const MARKS = /\p{M}+/gu;
const LETTERS: Readonly<Record<string, string>> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i' };
const SPECIAL_LETTERS = /[ßæœøłđðþı]/g;
const special = (c: string): string => LETTERS[c] ?? c;
const DOTTED = /\b([a-z])\.(?=[a-z](?:\.|\b))/g;
// runs of separators other than one space ("software engineer" is left as it is: no new string)
const ASCII_SEPARATORS = /[^a-z0-9]{2,}|[^a-z0-9 ]/g;
const SEPARATORS = /[^\p{L}\p{N}]+/gu;

/**
 * A past role named in a title ("Former CEO", "Ex-CTO, Software Architect", "Retired VP Sales",
 * "Past President", "ehemaliger Geschäftsführer", "ancien directeur") is not what the person is
 * now: the marker and what follows it are left out before the rules run, up to the next separator
 * (| , ; / ( ) [ ] : – — · •, a spaced hyphen, "--", a full stop and a space) or to "now" /
 * "current(ly)" ("Former CEO & current Chairman"). "ex" alone is a marker only before a chief
 * officer, founder, president, VP, chair or owner ("EX Director" is employee experience, and may be
 * an executive director); "ex officio" is a current role, Ex-Im a bank. A title that is nothing but
 * a past role reads as one no rule knows: staff, other (as "Retired" does). A marker after the role
 * ("CEO (Retired)", "VP Sales (former)", "CFO (ret.)", "CEO, retired", "CTO – Retired") makes the
 * role before it, back to the previous separator, a past one (ROLE_THEN_PAST, applied first).
 */
const PAST_ROLE_HINT = /former|ex[-\u2010\u2011\u2013 ]|retired|past |ehemalig|ancien|\(\s*ret\b/;
const ROLE_SEGMENT = String.raw`[^|,;/()[\]:\u2013\u2014\u00b7\u2022]*?`;
const ROLE_THEN_PAST = new RegExp(
  ROLE_SEGMENT +
    String.raw`(?:\(\s*(?:retired|former|ret\.?)\s*\)` +
    String.raw`|(?:,| [-\u2010\u2013\u2014] )\s*(?:retired|former)\s*(?=$|[|,;/]))`,
  'gu',
);
const EXECUTIVE_WORD = String.raw`(?:ceo|cto|cfo|coo|cmo|cio|cpo|cro|co ?-?founder|cofounder|founder|president|vp|vice|chief|chair\w*|owner|managing)\b`;
const PAST_ROLE = new RegExp(
  [
    String.raw`(?<![\p{L}\p{N}])(?:`,
    String.raw`(?:former(?:ly)?|retired|ehemalige?[rsn]?|ancien(?:ne)?)(?![\p{L}\p{N}])`,
    String.raw`|ex[-\u2010\u2011\u2013](?!officio|im\b)|ex (?=${EXECUTIVE_WORD})|past (?=president|chair)`,
    // what follows, up to a separator or to what the person is now
    String.raw`)(?:(?! [-\u2010\u2013] |--|\. |[^\p{L}\p{N}](?:now|current(?:ly)?)\b)[^|,;/()[\]:\u2013\u2014\u00b7\u2022])*`,
  ].join(''),
  'gu',
);

function withoutPastRoles(title: string): string {
  if (!PAST_ROLE_HINT.test(title)) return title;
  const rest = title.replace(ROLE_THEN_PAST, ' ').replace(PAST_ROLE, ' ');
  return rest === title || HAS_LETTER_OR_DIGIT.test(rest) ? rest : 'former';
}

// The last title folded: titleLevel(t) and titleDomain(t) are called one after the other.
let lastTitle = '';
let lastFolded = '';

/**
 * The title as the rules see it: lower case, accents removed, every run of characters other than
 * letters and digits one space, abbreviations spelled out. "Sr. SWE" → "senior software engineer".
 * A leading or trailing space may remain; rules match whole words, so it does not matter.
 */
export function foldTitle(title: string): string {
  if (title === lastTitle) return lastFolded;
  // compatibility forms first, so that every rule below reads "ＣＥＯ （Ｒｅｔｉｒｅｄ）" as "ceo (retired)"
  let t = withoutPastRoles((NON_ASCII.test(title) ? title.normalize('NFKC') : title).toLowerCase());
  if (t.includes('.')) t = t.replace(DOTTED, '$1'); // "C.E.O." is "ceo."
  t = NON_ASCII.test(t)
    ? t.normalize('NFKD').replace(MARKS, '').replace(SPECIAL_LETTERS, special).replace(SEPARATORS, ' ')
    : t.replace(ASCII_SEPARATORS, ' ');
  if (HAS_ABBREVIATION.test(t)) t = t.replace(ABBREVIATION, expand);
  lastTitle = title;
  lastFolded = t;
  return t;
}

function firstMatch<T>(rules: Compiled<T>, title: string | null | undefined, fallback: T): T | undefined {
  if (!title) return undefined;
  const folded = foldTitle(title);
  if (folded === '' || folded === ' ') return undefined;
  const { values, patterns } = rules;
  for (let i = 0; i < patterns.length; i++) if (patterns[i]!.test(folded)) return values[i];
  return fallback;
}

/** Seniority inferred from a job title: `staff` when no rule matches, undefined without a title. */
export const titleLevel = (title: string | null | undefined): TitleLevel | undefined => firstMatch(LEVELS, title, 'staff');

/** Function inferred from a job title: `other` when no rule matches, undefined without a title. */
export const titleDomain = (title: string | null | undefined): TitleDomain | undefined => firstMatch(DOMAINS, title, 'other');
