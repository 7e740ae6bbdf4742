import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { bare, isLocalAddress } from './url-policy.ts';

/**
 * The one place that makes outbound connections (SPEC §8: only to configured webhooks). A POST
 * with a deadline covering connection, request and the whole answer (headers and body: a 2xx is a
 * success only once its body ended); redirects are never followed (Node's http client does not
 * follow them; a 3xx is reported as a failure).
 */

export interface SendResult {
  ok: boolean;
  /** HTTP status of the answer; null when there was none. */
  status: number | null;
  error: string | null;
  ms: number;
}

export interface Sender {
  send(url: string, headers: Record<string, string>, body: Buffer, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<SendResult>;
  /** Closes idle keep-alive connections. */
  close(): void;
}

class Timeout extends Error {}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

const refusedLocal = (url: URL) => `not sent: ${bare(url.hostname)} resolves to this machine (loopback or one of its own addresses), a link-local address or a cloud metadata service; set WEBHOOK_ALLOW_LOCAL=true to allow it`;

/** A short, secret-free description of a failed attempt. */
function describe(err: NodeJS.ErrnoException, url: URL, reason: unknown, timeoutMs: number): string {
  if (reason instanceof Timeout) return `no answer within ${seconds(timeoutMs)}`;
  if (reason !== undefined) return 'interrupted (the server was stopping)';
  switch (err.code) {
    case 'ELOCALADDRESS':
      return refusedLocal(url);
    case 'ECONNREFUSED':
      return `connection refused by ${url.host}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host ${url.hostname} not found`;
    case 'ECONNRESET':
      return 'the connection was reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${url.host} is unreachable`;
    case 'ETIMEDOUT':
      return `connecting to ${url.host} timed out`;
    default:
      return (err.code ? `${err.code}: ` : '') + err.message.slice(0, 200);
  }
}

/** Resolves a name to all its addresses (dns.lookup; tests pass their own to make a name resolve to a chosen address). */
export type Resolve = (hostname: string, options: dns.LookupAllOptions, callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) => void;

/**
 * The agents' lookup: every address a name resolves to, refusing (unless `allowLocal`) names that
 * resolve to this machine (loopback or one of its interface addresses), a link-local address or a cloud metadata service.
 * Checked at connect time, so a name cannot change its answer between the check and the connection.
 */
const lookupWith = (resolve: Resolve, allowLocal: boolean): LookupFunction => (hostname, options, callback) => {
  resolve(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    if (!allowLocal && addresses.some((a) => isLocalAddress(a.address))) {
      return callback(Object.assign(new Error(`${hostname} resolves to a local address`), { code: 'ELOCALADDRESS' }), '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

export function createSender(userAgent: string, policy: { allowLocal?: boolean; resolve?: Resolve } = {}): Sender {
  // Keep-alive: a burst of deliveries to one receiver reuses its connections.
  const resolve: Resolve = policy.resolve ?? ((hostname, options, callback) => dns.lookup(hostname, options, callback));
  const lookup = lookupWith(resolve, policy.allowLocal ?? false);
  const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 16, lookup }), https: new https.Agent({ keepAlive: true, maxSockets: 16, lookup }) };
  return {
    send(raw, headers, body, opts) {
      const url = new URL(raw);
      const started = performance.now();
      const ac = new AbortController();
      return new Promise<SendResult>((resolve) => {
        let settled = false;
        const settle = (r: Omit<SendResult, 'ms'>) => {
          if (settled) return;
          settled = true;
          resolve({ ...r, ms: Math.round(performance.now() - started) });
        };
        /** The status, once the answer's headers arrived. */
        let answered: number | undefined;
        /** The answer's headers came but its body did not end: timed out, interrupted, or the connection closed. */
        const incomplete = (status: number) => {
          const reason = ac.signal.aborted ? ac.signal.reason : undefined;
          if (reason instanceof Timeout) return `answered ${status}, but the rest of the answer did not arrive within ${seconds(opts.timeoutMs)}`;
          if (reason !== undefined) return 'interrupted (the server was stopping)';
          return `answered ${status}, but the connection closed before the answer was complete`;
        };
        // The deadline ends the attempt whatever the connection does: aborted, the request reports
        // its error; one that can no longer report anything (a 101 answer took its socket) is
        // settled here, so that an attempt never holds its delivery's slot past the deadline.
        const timer = setTimeout(() => {
          ac.abort(new Timeout());
          setImmediate(() => {
            done();
            settle({ ok: false, status: answered ?? null, error: answered === undefined ? `no answer within ${seconds(opts.timeoutMs)}` : incomplete(answered) });
          });
        }, opts.timeoutMs);
        const onStop = () => ac.abort('stopping');
        opts.signal?.addEventListener('abort', onStop, { once: true });
        function done() {
          clearTimeout(timer);
          opts.signal?.removeEventListener('abort', onStop);
        }
        if (!policy.allowLocal && isLocalAddress(bare(url.hostname))) {
          // a literal address is connected to without a lookup
          done();
          settle({ ok: false, status: null, error: refusedLocal(url) });
          return;
        }
        const mod = url.protocol === 'https:' ? https : http;
        /** Sends the request: on a kept-alive connection of the pool, or (`fresh`) on one of its own. */
        const post = (fresh: boolean) => {
          const req = mod.request(url, {
            method: 'POST',
            headers: { ...headers, 'user-agent': userAgent, 'content-length': String(body.length) },
            // the retry on a connection of its own (with the same lookup and its refusals): another
            // idle one of the pool may have been closed by the receiver as well
            ...(fresh ? { agent: false, lookup } : { agent: url.protocol === 'https:' ? agents.https : agents.http }),
            signal: ac.signal,
          });
          // A 101 (Switching Protocols) is no answer to a POST a webhook can give: Node hands the
          // socket to 'upgrade' listeners, or destroys it without an 'error' when there is none (a
          // tester's receiver held its webhook's slots, then its organization's, until a restart).
          req.on('upgrade', (res, socket) => {
            socket.destroy();
            done();
            settle({ ok: false, status: res.statusCode ?? 101, error: `answered ${res.statusCode ?? 101} (switching protocols); a webhook must answer 2xx` });
          });
          req.on('close', () => {
            // the request ended without an answer, an error or an upgrade: nothing else will settle it
            if (answered !== undefined) return; // the answer's own events settle it
            done();
            settle({ ok: false, status: null, error: 'the connection closed without an answer' });
          });
          req.on('response', (res) => {
            const status = (answered = res.statusCode ?? 0);
            res.on('error', () => undefined);
            if (status < 200 || status >= 300) {
              // A failure is settled by its status, and its body is not waited for: the connection
              // closes at once. Read to its end, a slow error body held its socket to the deadline
              // after the attempt had freed its slot, and the agent's 16 sockets for the host were
              // soon all held so: other organizations' attempts queued behind them and timed out
              // (a tester's case).
              done();
              settle({ ok: false, status, error: status >= 300 && status < 400 ? `answered ${status}; redirects are not followed` : `answered ${status}` });
              req.destroy();
              return;
            }
            // A 2xx answer's body is read and dropped, never kept (so the connection can be reused),
            // within the same deadline; it is a success only once the whole answer arrived.
            res.on('end', () => {
              done();
              settle({ ok: true, status, error: null });
            });
            res.on('close', () => {
              done();
              settle({ ok: false, status, error: incomplete(status) }); // a no-op after 'end'
            });
            res.resume();
          });
          req.on('error', (err) => {
            // A kept-alive connection the receiver closed while idle (a load balancer's, a server
            // that does not announce its Keep-Alive timeout) resets as the request is written: the
            // request never reached the receiver, which was healthy, so it is sent once more on a
            // new connection (Node's advice for req.reusedSocket). It counted as the receiver's
            // failure: a ping said "failed", an event's delivery waited 5 s and its webhook lost
            // its good standing (a tester's case). Receivers deduplicate by X-Ledger-Delivery anyway.
            if (answered === undefined && !fresh && req.reusedSocket && !ac.signal.aborted && (err as NodeJS.ErrnoException).code === 'ECONNRESET') {
              req.removeAllListeners('close');
              post(true);
              return;
            }
            done();
            if (answered !== undefined) return settle({ ok: false, status: answered, error: incomplete(answered) });
            settle({ ok: false, status: null, error: describe(err, url, ac.signal.aborted ? ac.signal.reason : undefined, opts.timeoutMs) });
          });
          req.end(body);
        };
        post(false);
      });
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
