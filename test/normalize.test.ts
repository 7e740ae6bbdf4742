// Canonical forms of SPEC §4.1: LinkedIn profile URLs and e-mail shapes (company names and titles
// have suites of their own: tracking.test.ts, title-rules.test.ts).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { regExpLiteral } from '../src/regexp-literal.ts';
import { accountEmail, canonicalLinkedin, emailKey, emailProblem, isEmail, parseLinkedin, placeholderProblem, storedEmailKey } from '../src/normalize.ts';

const N = suite('canonical LinkedIn URLs and e-mails');

N('every spelling of a profile URL gives https://www.linkedin.com/in/<slug>', () => {
  const same = [
    'https://www.linkedin.com/in/ann-lee',
    'linkedin.com/in/ann-lee',
    'www.linkedin.com/in/ann-lee/',
    'HTTP://de.LinkedIn.com/in/Ann-Lee/?trk=public_profile',
    'https://mobile.linkedin.com/in/ann-lee#experience',
    'https://m.linkedin.com/in/ann-lee', // the mobile site's links
    'https://www.linkedin.com/mwlite/in/ann-lee', // the lightweight mobile site's
    'https://www.linkedin.com/in/ann-lee/details/experience/',
    'https://www.linkedin.com/in/ann-lee/recent-activity/all/',
    ' https://linkedin.com/in/ann%2Dlee ',
  ];
  for (const s of same) assert.is(canonicalLinkedin(s), 'https://www.linkedin.com/in/ann-lee', s);
  assert.is(canonicalLinkedin('https://www.linkedin.com/in/j%C3%BCrgen-m%C3%BCller'), 'https://www.linkedin.com/in/jürgen-müller');
});

N('anything that is not a person\'s profile is refused', () => {
  for (const s of [
    'https://www.linkedin.com/company/acme',
    'https://www.linkedin.com/in/',
    'https://www.linkedin.com/feed/',
    'https://www.linkedin.com/mwlite/company/acme',
    'https://www.linkedin.com/mwlite/',
    'https://example.com/in/ann-lee',
    'https://linkedin.com.evil.test/in/ann-lee',
    'https://mm.linkedin.com.evil.test/in/ann-lee',
    'https://x.m.linkedin.com/in/ann-lee',
    'https://user:pw@www.linkedin.com/in/ann-lee',
    'https://www.linkedin.com:8443/in/ann-lee',
    'https://www.linkedin.com/in/ann lee',
    // the URL parser drops tabs and line breaks: no other profile made of the slug's two halves
    'https://www.linkedin.com/in/ann\tsmith',
    'https://www.linkedin.com/in/ann\nsmith',
    'https://www.linkedin.com/in/ann\r\nsmith',
    'https://www.linkedin.com/i\tn/ann-t',
    'linkedin.com/in/ann\u0000smith',
    // nor does it take a backslash for a slash: not the profile ann19's sub-page
    'https://www.linkedin.com/in/ann19\\x',
    'https://www.linkedin.com/in/ann-lee\\details',
    'https://www.linkedin.com\\in\\ann-lee',
    'https://www.linkedin.com/in/%E0%A4%A',
    'not a url at all',
  ]) assert.is(canonicalLinkedin(s), undefined, s);
});

N('the fast path for canonical URLs gives what the full parse gives', () => {
  const slugs = ['ann-lee', 'a', 'x_9', 'a'.repeat(100), 'a'.repeat(101), 'Ann-Lee', 'ann%2dlee', 'jürgen', 'ann.lee', '-', '_'];
  const shapes = (slug: string) => [
    `https://www.linkedin.com/in/${slug}`,
    `https://www.linkedin.com/in/${slug}/`,
    `https://www.linkedin.com/in/${slug}//`,
    `https://www.linkedin.com/in/${slug}?x=1`,
    `https://www.linkedin.com/in/${slug}/details`,
    `http://www.linkedin.com/in/${slug}`,
    `https://linkedin.com/in/${slug}`,
    `https://www.linkedin.com/IN/${slug}`,
    `https://www.linkedin.com/in/${slug} `,
    `https://www.linkedin.com/in/${slug}\n`,
  ];
  let fast = 0;
  for (const slug of slugs) {
    for (const s of shapes(slug)) {
      assert.is(canonicalLinkedin(s), parseLinkedin(s), s);
      if (canonicalLinkedin(s) === s) fast++;
    }
  }
  assert.ok(fast >= 4, 'some inputs are already canonical');
});

N('e-mail shapes', () => {
  for (const ok of ['ann@acme.test', 'first.last+tag@sub.example.co.uk', '=a@b.com', "o'brien@x-y.test", 'josé@münchen.de', 'a@xn--mnchen-3ya.de', 'a@1-2.3.test', 'ann@ACME.TEST'])
    assert.ok(isEmail(ok), ok);
  for (const bad of ['ann', 'ann@', '@acme.test', 'ann@acme', 'a b@acme.test', 'ann@acme.test, bob@acme.test', '<ann@acme.test>']) assert.not.ok(isEmail(bad), bad);
  // not deliverable (RFC 5321 dot-atom; a tester's cases) — but still looked for, as addresses stored before may be
  for (const bad of ['a..b@x.test', '.a@x.test', 'a.@x.test', 'a@-x.test', 'a@x-.test', 'a@x.test.', 'a@x..test', 'a@x_y.test', 'a@.x.test']) {
    assert.is(emailProblem(bad), `email "${bad}" is not an e-mail address`, bad);
    assert.is(emailProblem(bad, 'email', true), undefined, `${bad} (lookup)`);
  }
  assert.ok(emailProblem('no-at-sign', 'email', true), 'a lookup still needs an address');
  // longer than RFC 5321 / 1035 allow (a tester's cases): 64 bytes before @, 63 to a label (in its IDNA form)
  const x = (n: number, c = 'x') => c.repeat(n);
  for (const ok of [`${x(64)}@b.test`, `${x(32, 'é')}@b.test`, `a@${x(63)}.test`, `a@${x(40, 'ü')}.test`, `a@${[x(63), x(63), x(63), x(61)].join('.')}`]) assert.is(emailProblem(ok), undefined, ok);
  for (const [bad, why] of [[`${x(65)}@b.test`, 'the part before @ is longer than 64 bytes'], [`${x(33, 'é')}@b.test`, 'the part before @ is longer than 64 bytes'], [`a@${x(64)}.test`, 'a part of its domain is longer than 63 characters'], [`a@b.${x(300)}`, 'a part of its domain is longer than 63 characters'], [`a@${x(60, 'ü')}.test`, 'a part of its domain is longer than 63 characters'], [`a@${[x(63), x(63), x(63), x(62)].join('.')}`, 'its domain is longer than 253 characters']] as [string, string][]) {
    assert.is(emailProblem(bad), `email "${bad}" is not an e-mail address (${why})`, bad);
    assert.is(emailProblem(bad, 'email', true), undefined, 'still looked for');
  }
  // an IP address is no domain (RFC 3696 §2: a top-level domain is never all digits); digits elsewhere are
  for (const bad of ['ann@1.2.3.4', 'ann@acme.123', 'ann@1.2.3.\uff14', 'ann@acme.\uff11\uff12\uff13']) {
    assert.is(emailProblem(bad), `email "${bad}" is not an e-mail address (its domain ends in a number: an IP address is not a domain)`, bad);
    assert.is(emailProblem(bad, 'email', true), undefined, `${bad} (lookup)`);
  }
  for (const ok of ['ann@123.test', 'ann@1.2.3.x4', 'ann@acme.xn--p1ai']) assert.is(emailProblem(ok), undefined, ok);
  // an account's address: full-width letters and digits are their usual ones, full-width punctuation stays (＠ made a second @ after the check: a reviewer's case)
  assert.is(accountEmail(' \uff21\uff44\uff4d\uff49\uff4e\uff11@x.test'), 'admin1@x.test');
  assert.is(accountEmail('ann\uff20corp.test@x.test'), 'ann\uff20corp.test@x.test');
  assert.is(accountEmail('ad\uff08min\uff09@x.test'), 'ad\uff08min\uff09@x.test');
  // a Punycode domain in its Unicode form; anything else past the @ as it is (domainToUnicode parses a URL host: a reviewer's case)
  assert.is(accountEmail('J\u00d6RG@XN--EXMPLE-CUA.COM'), 'j\u00f6rg@ex\u00e4mple.com');
  for (const odd of ['x@xn--exmple-cua.com/../a', 'x@xn--exmple-cua%2ecom', 'x@xn--exmple-cua.com?q']) assert.is(accountEmail(odd), odd.toLowerCase(), odd);
  // placeholders for an unknown employer, as written and in compatibility forms; names are not checked for words
  for (const company of ['-', '—', '...', '\u3164', 'N/A', 'n.a.', 'ＮＡ', 'N／A', 'tba', 'Not applicable', ' none '])
    assert.ok(placeholderProblem(company, 'company'), JSON.stringify(company));
  for (const company of ['Acme', 'NAB', 'Unknown Worlds', 'Self-employed', '3M', '株式会社']) assert.is(placeholderProblem(company, 'company'), undefined, company);
  assert.is(placeholderProblem('Na', 'name'), undefined, 'Na is a surname');
  // characters that show nothing: the address would look like the typed one and never match it
  for (const bad of ['ann@acme.test\u200b', 'an\u00adn@acme.test', 'ann\u2060@acme.test', 'ann@acme\ufeff.test', 'ann\u0085@acme.test', 'ann\u200d@acme.test']) {
    assert.not.ok(isEmail(bad), JSON.stringify(bad));
    assert.match(emailProblem(bad)!, /^email contains an invisible character \(U\+[0-9A-F]{4}\)/);
  }
});

N('a LinkedIn slug written decomposed (e + U+0301, as macOS writes it) is the composed one', () => {
  assert.is(canonicalLinkedin('https://www.linkedin.com/in/jose\u0301-garci\u0301a'), 'https://www.linkedin.com/in/jos\u00e9-garc\u00eda');
  assert.is(canonicalLinkedin('linkedin.com/in/jose%CC%81-garci%CC%81a/'), canonicalLinkedin('linkedin.com/in/jos%C3%A9-garc%C3%ADa'));
});

N('e-mail keys: Unicode case and composed form in the local part, the domain in IDNA form; stored only where lower() of the address is not the key', () => {
  const same = [
    ['JOSÉ@example.com', 'josé@example.com', 'jose\u0301@EXAMPLE.com'],
    ['ann@MÜNCHEN.de', 'ann@münchen.de', 'ANN@xn--mnchen-3ya.DE'],
    ['Bob.Roe+crm@Globex.test', 'bob.roe+crm@globex.test'],
  ];
  for (const group of same) for (const e of group) assert.is(emailKey(e), emailKey(group[0]!), e);
  assert.is.not(emailKey('jose@example.com'), emailKey('josé@example.com'), 'an accent is a letter of its own');
  // what the e-mail indexes hold: coalesce(email_key, lower(email)), lower() folding A–Z only
  const sqliteLower = (e: string) => e.replace(/[A-Z]/g, (c) => c.toLowerCase());
  for (const e of [...same.flat(), 'x@y.z', 'ÅSA@bolag.se', 'åsa@bolag.se', 'İ@x.test']) {
    assert.is(storedEmailKey(e) ?? sqliteLower(e), emailKey(e), e);
    if (/^[\x00-\x7f]*$/.test(e)) assert.is(storedEmailKey(e), null, `${e}: nothing stored for an ASCII address`);
  }
  assert.is(storedEmailKey(null), null);
});

N('a pattern built from data matches that text and nothing else (folder paths, prefixes, abbreviations)', () => {
  for (const text of ['/srv/cl (old)/data', 'a.b*c+d?e^f$g{1}h|i[j]k\\l', 'Sr.', 'C++', '$&']) {
    const exact = new RegExp(`^${regExpLiteral(text)}$`);
    assert.ok(exact.test(text), text);
    assert.not.ok(exact.test(`${text}x`), text);
  }
  assert.not.ok(new RegExp(`^${regExpLiteral('Sr.')}$`).test('Srx'));
  assert.not.ok(new RegExp(`^${regExpLiteral('a*')}$`).test('aaa'));
});

N.run();
