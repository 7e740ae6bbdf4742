// Where the time goes in a V8 CPU profile of the server (BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=…"
// on bench:list or bench:download): every sample is put in the first category that matches a frame,
// from the sampled function up its stack; start-up (module loading, opening the database) and idle
// time are set apart. With a request (or row) count it prints the cost of one.
//
//   node scripts/bench/profile-summary.ts <file.cpuprofile> [count] [unit]
import { readFileSync } from 'node:fs';

interface Frame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, countArg, unit = 'request'] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [count] [unit]');
const count = Number(countArg ?? 0);

const is = (pattern: RegExp) => (f: Frame) => pattern.test(f.url);
const fn = (pattern: RegExp, url?: RegExp) => (f: Frame) => pattern.test(f.functionName) && (!url || url.test(f.url));

/** Checked in order for each frame, from the sampled one up. */
const CATEGORIES: [string, (f: Frame) => boolean][] = [
  // a list page and a download page run their SQL in the same steps (contacts-repo.ts pageOf, stepThrough; the steps are arrows)
  ['SQLite: list or download pages (and their rows mapped)', fn(/^(|listContacts|listDownloadRows|countContacts|pageOf|stepThrough|windowEnd)$/, /contacts-repo/)],
  ['SQLite: plan probe', fn(/^probeRange$/)],
  ['SQLite: session, account, membership, ledger', fn(/^(findSession|findUserById|findOrgById|findRole|findLedger|findServiceAccountById)$/)],
  ['bare server handler (SQLite + JSON.stringify)', is(/bench\/bare-server/)],
  ['JSON serialization', (f) => /json-body/.test(f.url) || (f.functionName === 'respond' && /koa\/lib\/application/.test(f.url))],
  ['CSV writing', is(/src\/csv\/write|csv-stringify/)],
  ['download rows → CSV lines', fn(/^downloadLines$/)],
  ['Buffer.byteLength', fn(/^byteLength$/)],
  ['socket writes', (f) => /^(writev|writeString|writeBuffer|writeGeneric|writevGeneric)$/.test(f.functionName) || /stream_base_commons/.test(f.url)],
  ['logging (pino)', is(/pino|sonic-boom/)],
  ['request validation (zod)', is(/\/zod\//)],
  ['JWT (jose, crypto)', (f) => /\/jose\//.test(f.url) || /internal\/crypto/.test(f.url)],
  ['presenters, timestamps', is(/presenters\.ts|src\/clock\.ts|common-schemas\.ts/)],
  ['routing (@koa/router)', is(/@koa\/router/)],
  ['Koa', is(/node_modules\/(koa|koa-compose|delegates|on-finished|statuses|vary|content-type|mime-types|mime-db|type-is|accepts|negotiator|fresh|http-errors|cookies|encodeurl|escape-html|only|ee-first|media-typer)\//)],
  ['our middleware, routes, services', is(/\/src\//)],
  ['Node streams', (f) => /internal\/streams|^node:stream/.test(f.url)],
  ['Node HTTP, net', is(/node:(_http|net|http)|_http_/)],
  ['garbage collector', fn(/^\(garbage collector\)$/)],
];
const startup = (f: Frame) =>
  f.functionName === 'evaluate' || f.functionName === 'openRuntime' || /esm\/loader|modules\/cjs|amaro/.test(f.url) || f.functionName === 'compileForInternalLoader';

const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const totals = new Map<string, number>();
let all = 0;
for (let i = 0; i < p.samples.length; i++) {
  const dt = p.timeDeltas[i] ?? 0;
  all += dt;
  let cat: string | undefined;
  const leaf = byId.get(p.samples[i]!)!.callFrame.functionName;
  if (leaf === '(idle)') cat = 'idle';
  for (let id: number | undefined = p.samples[i]; id !== undefined && !cat; id = parent.get(id)) if (startup(byId.get(id)!.callFrame)) cat = 'start-up';
  for (let id: number | undefined = p.samples[i]; id !== undefined && !cat; id = parent.get(id)) {
    const f = byId.get(id)!.callFrame;
    cat = CATEGORIES.find(([, test]) => test(f))?.[0];
  }
  cat ??= 'other';
  totals.set(cat, (totals.get(cat) ?? 0) + dt);
}
const busy = [...totals].filter(([c]) => c !== 'idle' && c !== 'start-up').reduce((n, [, v]) => n + v, 0);
const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`;
console.log(`${file}: ${ms(all)} sampled, ${ms(busy)} busy (without idle and start-up)${count ? `, ${(busy / count).toFixed(1)} µs per ${unit} over ${count}` : ''}`);
for (const [cat, v] of [...totals].sort((a, b) => b[1] - a[1])) {
  const counted = cat !== 'idle' && cat !== 'start-up';
  const share = counted ? `${((100 * v) / busy).toFixed(1)}%` : '';
  const per = counted && count ? `${(v / count).toFixed(1)} µs/${unit}` : '';
  console.log(`${ms(v).padStart(9)} ${share.padStart(6)} ${per.padStart(16)}  ${cat}`);
}
