// The "limit" server of bench:list: node:http + better-sqlite3 and nothing else. It answers
// GET /contacts?ledgerId=…&since=<ms> with the first 100 contacts changed since `since`, running
// the SQL statement the project runs for `GET …/contacts?lastInfoChangedAt=…&limit=100` (the same
// index, filter, order and limit; see LIST_SQL), and prints its port on stdout.
//
//   node scripts/bench/bare-server.ts <database file>
import http from 'node:http';
import Database from 'better-sqlite3';

const COLUMNS =
  'seq, id, ledger_id, import_id, reference_id, name, company, import_company, import_title, title, title_level, title_domain, location, email, email_status, linkedin, has_multiple_jobs, is_verified, job_started_at, last_job_changed_at, last_info_changed_at, created_at, updated_at';

/** What contacts-repo listContacts runs for a lastInfoChangedAt filter that selects few rows, default sort (+createdAt), limit + 1. */
const LIST_SQL = `SELECT ${COLUMNS} FROM contacts INDEXED BY contacts_by_info_change WHERE ledger_id = ? AND last_info_changed_at >= ? ORDER BY created_at ASC, seq ASC LIMIT ?`;

const file = process.argv[2];
if (!file) throw new Error('usage: bare-server.ts <database file>');
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('cache_size = -65536');
const list = db.prepare(LIST_SQL);

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const ledgerId = url.searchParams.get('ledgerId');
  const since = Number(url.searchParams.get('since'));
  if (url.pathname !== '/contacts' || !ledgerId || !Number.isFinite(since)) {
    res.writeHead(404).end();
    return;
  }
  const rows = list.all(ledgerId, since, 101);
  // the body as UTF-8 bytes written into worst-case room, as the project sends JSON (src/http/json-body.ts)
  const text = JSON.stringify({ contacts: rows.slice(0, 100) });
  const buf = Buffer.allocUnsafe(text.length * 3);
  const body = buf.subarray(0, buf.write(text, 'utf8'));
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
