// Builds the web application into web/dist: one hashed script, one hashed stylesheet, index.html
// naming them, and the static files of web/public. `npm run build:web`; well under a second.
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';

const here = join(import.meta.dirname, '..', 'web');
const dist = join(here, 'dist');
const started = Date.now();

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src', 'main.tsx'), styles: join(here, 'src', 'styles.css') },
  outdir: dist,
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome120', 'firefox120', 'safari17'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
  // Names (and so the hashes in the file names) from the paths as the project sees them, also when
  // node_modules is a link to a folder elsewhere (scripts/build.ts, reproducible builds).
  preserveSymlinks: true,
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => /^app-.*\.js$/.test(f));
const css = outputs.find((f) => /^styles-.*\.css$/.test(f));
if (!js || !css) throw new Error(`build produced ${outputs.join(', ')}`);

const html = readFileSync(join(here, 'index.html'), 'utf8').replace('%APP_JS%', `/${js}`).replace('%APP_CSS%', `/${css}`);
writeFileSync(join(dist, 'index.html'), html);
if (existsSync(join(here, 'public'))) cpSync(join(here, 'public'), dist, { recursive: true });

const size = (f: string) => {
  const b = readFileSync(join(dist, f));
  return `${(b.length / 1024).toFixed(1)} kB (${(gzipSync(b, { level: 9 }).length / 1024).toFixed(1)} kB gzip)`;
};
process.stdout.write(`web/dist built in ${Date.now() - started} ms: ${js} ${size(js)}, ${css} ${size(css)}, index.html ${size('index.html')}\n`);
