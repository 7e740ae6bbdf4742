// titleLevel and titleDomain (src/title-rules.ts) over test/fixtures/titles.tsv: real-world
// title spellings, one `title<TAB>level<TAB>domain` per line, `#` lines are comments.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { foldTitle, TITLE_DOMAINS, TITLE_LEVELS, titleDomain, titleLevel } from '../src/title-rules.ts';

interface Row {
  line: number;
  title: string;
  level: string;
  domain: string;
}

const rows: Row[] = readFileSync(join(import.meta.dirname, 'fixtures', 'titles.tsv'), 'utf8')
  .split('\n')
  .map((text, i) => ({ text, line: i + 1 }))
  .filter(({ text }) => text !== '' && !text.startsWith('#'))
  .map(({ text, line }) => {
    const [title = '', level = '', domain = '', ...rest] = text.split('\t');
    if (rest.length) throw new Error(`titles.tsv:${line}: more than three columns`);
    return { line, title, level, domain };
  });

const T = suite('title rules');

T('the fixture is a few hundred distinct titles, with valid expectations covering every level and domain', () => {
  assert.ok(rows.length >= 300, `${rows.length} titles`);
  const titles = rows.map((r) => r.title);
  assert.equal(titles.filter((t, i) => titles.indexOf(t) !== i), [], 'no title twice');
  const invalid = rows.filter((r) => !(TITLE_LEVELS as readonly string[]).includes(r.level) || !(TITLE_DOMAINS as readonly string[]).includes(r.domain));
  assert.equal(invalid, []);
  assert.equal([...new Set(rows.map((r) => r.level))].sort(), [...TITLE_LEVELS].sort());
  assert.equal([...new Set(rows.map((r) => r.domain))].sort(), [...TITLE_DOMAINS].sort());
});

T('every fixture title gets its expected level and domain (all mismatches listed)', () => {
  const mismatches = rows
    .map((r) => ({ ...r, gotLevel: titleLevel(r.title), gotDomain: titleDomain(r.title) }))
    .filter((r) => r.gotLevel !== r.level || r.gotDomain !== r.domain)
    .map((r) => `titles.tsv:${r.line} ${JSON.stringify(r.title)} (folded ${JSON.stringify(foldTitle(r.title))}): expected ${r.level}/${r.domain}, got ${r.gotLevel}/${r.gotDomain}`);
  assert.equal(mismatches, [], `${mismatches.length} of ${rows.length} titles mismatch:\n${mismatches.join('\n')}`);
});

T('answers do not depend on call order (the last folded title is reused)', () => {
  const interleaved = rows.map((r) => [titleLevel(r.title), titleDomain(r.title)]);
  const levels = rows.map((r) => titleLevel(r.title));
  const domains = [...rows].reverse().map((r) => titleDomain(r.title)).reverse();
  assert.equal(levels.map((l, i) => [l, domains[i]]), interleaved);
});

T('no title, or a blank one, gives no level and no domain', () => {
  for (const t of [undefined, null, '', ' ', '   ', '\t\n', '-', ' / ', '…', '\u0301']) {
    assert.is(titleLevel(t), undefined, JSON.stringify(t));
    assert.is(titleDomain(t), undefined, JSON.stringify(t));
  }
});

T('words no rule knows give staff and other', () => {
  for (const t of ['Xyzzy', 'Astronaut', 'Wizard of Light Bulb Moments', '42', 'Специалист', '営業', 'VpEngineering']) {
    assert.is(titleLevel(t), 'staff', t);
    assert.is(titleDomain(t), 'other', t);
  }
});

T('folding: lower case, accents and punctuation gone, abbreviations spelled out', () => {
  const cases: [string, string][] = [
    ['Sr. SWE', 'senior software engineer'],
    ['Vice-President, Sales', 'vice president sales'],
    ['VP/GM', 'vice president general manager'],
    ['Founder & CEO', 'founder chief executive officer'],
    ['C.E.O.', 'chief executive officer'],
    ['  Eng   Mgr  ', 'engineering manager'],
    ['Geschäftsführer', 'geschaftsfuhrer'],
    ['Directeur Général', 'directeur general'],
    ['Dueño', 'dueno'],
    ['FP&A', 'financial planning and analysis'],
    ['(Interim) CFO', 'interim chief financial officer'],
    // full-width and other compatibility forms read as their ASCII ones, past-role markers included
    ['\uff23\uff25\uff2f', 'chief executive officer'], // ＣＥＯ
    ['\uff23.\uff25.\uff2f.', 'chief executive officer'], // Ｃ.Ｅ.Ｏ.
    ['\uff23\uff25\uff2f \uff08\uff32\uff45\uff54\uff49\uff52\uff45\uff44\uff09', 'former'], // ＣＥＯ （Ｒｅｔｉｒｅｄ）
    ['Louis \u2163, \uff36\uff30 Sales', 'louis iv vice president sales'], // Louis Ⅳ, ＶＰ Sales
  ];
  assert.equal(cases.map(([t]) => foldTitle(t).trim()), cases.map(([, f]) => f));
});

T('precedence: intern, then assistants, then the highest level named; the earlier domain rule wins', () => {
  const cases: [string, string, string][] = [
    ['Intern to the CEO', 'intern', 'other'], // intern beats everything
    ['Executive Assistant to the CEO', 'staff', 'operations'], // assistants to executives are not executives
    ['Chief of Staff', 'director', 'operations'],
    ['Vice President', 'vp', 'other'], // "vice president" is not "president"
    ['President', 'c_suite', 'other'],
    ['Head of People', 'director', 'people'], // head of = director
    ['Co-Founder', 'c_suite', 'other'],
    ['VP Engineering / CTO', 'c_suite', 'engineering'], // several roles: the highest level
    ['VP Sales & Marketing', 'vp', 'sales'], // several functions: the earlier rule (sales before marketing)
    ['Technical Recruiter', 'staff', 'people'], // the role noun beats the qualifier
    ['Product Marketing Manager', 'manager', 'marketing'],
    ['Principal Engineer', 'staff', 'engineering'], // a senior individual contributor
    ['Product Owner', 'staff', 'product'], // not an owner of the company
    ['HR Business Partner', 'staff', 'people'], // not a partner of the firm
  ];
  assert.equal(cases.map(([t]) => [t, titleLevel(t), titleDomain(t)]), cases);
});

T('"Chair" is the board\'s when the title says no more or names the board; a department\'s chair is its head; other chairs go by the other words', () => {
  // a tester's cases: "Chair" and "Co-Chair" were staff, "Chair, Board of Directors" director, while "Board Chair" was c_suite
  for (const t of ['Chair', 'Co-Chair', 'Chair, Board of Directors', 'Chair of the Board of Directors', 'Board Chair', 'Chairperson', 'Interim Chair', 'Vice Chair'])
    assert.is(titleLevel(t), 'c_suite', t);
  for (const t of ['Department Chair', 'Chair of the Math Department', 'Chair, Department of Medicine', 'Vice Chair, Department of Radiology'])
    assert.is(titleLevel(t), 'director', t);
  for (const t of ['Program Committee Chair', 'Vice Chair of the Program Committee', 'Session Chair', 'Endowed Chair in Economics', 'Advisory Board Chair', "Chair's Assistant"])
    assert.is(titleLevel(t), 'staff', t);
});

T.run();
