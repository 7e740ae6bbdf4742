// The "framework" server of bench:list: the bare server's handler (scripts/bench/bare-server.ts:
// same SQL, same rows, same JSON bytes) behind Koa and @koa/router, nothing else — no
// authentication, validation, presenters, logging, metrics or security headers. It separates what
// the framework costs from what the project's own per-request work costs. Prints its port.
//
//   node scripts/bench/koa-server.ts <database file>
import Router from '@koa/router';
import Koa from 'koa';
import { answer, openList } from './bare-server.ts';

const file = process.argv[2];
if (!file) throw new Error('usage: koa-server.ts <database file>');
const { db, list } = openList(file);
const app = new Koa();
const router = new Router();
router.get('/contacts', (ctx) => {
  const body = answer(list, ctx.query.ledgerId, ctx.query.since);
  if (!body) return; // Koa's 404
  ctx.type = 'application/json';
  ctx.body = body;
});
app.use(router.routes());
const server = app.listen(0, '127.0.0.1', () => {
  const a = server.address();
  console.log(`listening ${typeof a === 'object' && a ? a.port : 0}`);
});
process.on('SIGTERM', () => {
  server.close(() => db.close());
  server.closeAllConnections();
});
