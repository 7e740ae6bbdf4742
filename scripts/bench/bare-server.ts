// The "limit" server of bench:list: node:http + better-sqlite3 and nothing else. It answers
// GET /contacts?ledgerId=…&since=<ms> with the first 100 contacts changed since `since`, running
// the SQL statement the project runs for `GET …/contacts?lastInfoChangedAt=…&limit=100` (the same
// index, filter, order and limit; see LIST_SQL), and prints its port on stdout.
// koa-server.ts serves the same answer (openList, answer) behind Koa.
//
//   node scripts/bench/bare-server.ts <database file>
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';

const COLUMNS =
  'seq, id, ledger_id, import_id, reference_id, name, company, import_company, import_title, title, title_level, title_domain, location, email, email_status, linkedin, has_multiple_jobs, is_verified, job_started_at, last_job_changed_at, last_info_changed_at, created_at, updated_at';

/**
 * What contacts-repo listContacts runs for a lastInfoChangedAt filter that selects few rows,
 * default sort (+createdAt), limit + 1: the page's keys from the covering index, then their rows.
 */
const LIST_SQL = `SELECT ${COLUMNS} FROM contacts WHERE seq IN (SELECT seq FROM contacts INDEXED BY contacts_by_info_change_created WHERE ledger_id = ? AND last_info_changed_at >= ? ORDER BY created_at ASC, seq ASC LIMIT ?) ORDER BY created_at ASC, seq ASC`;

export function openList(file: string) {
  const db = new Database(file, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -65536');
  return { db, list: db.prepare(LIST_SQL) };
}

/** The answer's body, or undefined for a bad query: the rows as JSON, as UTF-8 bytes written into worst-case room (as the project sends JSON, src/http/json-body.ts). */
export function answer(list: Database.Statement, ledgerId: unknown, since: unknown): Buffer | undefined {
  const ms = Number(since);
  if (typeof ledgerId !== 'string' || !ledgerId || !Number.isFinite(ms)) return undefined;
  const rows = list.all(ledgerId, ms, 101);
  const text = JSON.stringify({ contacts: rows.slice(0, 100) });
  const buf = Buffer.allocUnsafe(text.length * 3);
  return buf.subarray(0, buf.write(text, 'utf8'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: bare-server.ts <database file>');
  const { db, list } = openList(file);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = url.pathname === '/contacts' ? answer(list, url.searchParams.get('ledgerId'), url.searchParams.get('since')) : undefined;
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length }).end(body);
  });
  server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    console.log(`listening ${typeof a === 'object' && a ? a.port : 0}`);
  });
  process.on('SIGTERM', () => {
    server.close(() => db.close());
    server.closeAllConnections();
  });
}
