import { randomUUID } from 'node:crypto';
import http, { STATUS_CODES } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { clientOf } from '../client-address.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { problemBody } from './problem.ts';

/** How long an idle keep-alive connection stays open between two requests. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/**
 * Node checks the header and request deadlines of open connections only every
 * `connectionsCheckingInterval` (30 s by default), so a client could hold a connection up to 30 s
 * past either deadline: they are checked every second instead, or a tenth of the shorter
 * deadline when that is shorter still (tests run with deadlines of a second or two).
 */
export const checkingIntervalMs = (c: Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs'>): number =>
  Math.max(50, Math.min(1_000, Math.floor(Math.min(c.headersTimeoutMs, c.requestTimeoutMs) / 10)));

export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  checkingIntervalMs: number;
  /** Connections at once from one client (clientOf), and in all; 0: no limit. */
  maxConnectionsPerAddress: number;
  maxConnections: number;
}

/**
 * A request Node's parser refused before the application saw it — a URL with raw non-ASCII
 * characters, a malformed head, a head too large, a timeout — answered as problem+json like every
 * other error (SPEC §2), with the status Node itself would send (400, 431, 408), instead of Node's
 * bare status line. Written only while nothing was sent on the connection, as Node does.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable || (socket as Duplex & { bytesWritten?: number }).bytesWritten) {
    socket.destroy();
    return;
  }
  const [status, code, detail] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request was not received in time.']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'The request head is too large.']
        : [400, 'malformed_request', malformedDetail(err)];
  // the id of the request the application is reading (a 408 mid-body: the one its access line
  // logs), else one of its own, as every answer has (SPEC §2): a head not read carries none
  const requestId = requestIds.get(socket) ?? randomUUID();
  const body = JSON.stringify(problemBody(new AppError(status, code, detail), requestId));
  answeredHere.set(socket, status);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`);
  // end() only half-closes (the server's sockets allow half-open connections): a client that never
  // closes its side would keep the descriptor for ever. It gets a moment to read the answer, then the
  // socket is gone.
  setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
}

/**
 * What was wrong with a request Node's parser refused, in the parser's own words ("Invalid header
 * token", "Duplicate Content-Length": fixed texts of llhttp, never the request's bytes), and how to
 * write a URL when the URL is what it could not read. Every refusal said the URL's characters
 * outside ASCII had to be percent-encoded, whatever was wrong (a reviewer's case).
 */
function malformedDetail(err: NodeJS.ErrnoException & { reason?: string }): string {
  const reason = (err.reason ?? err.message.replace(/^Parse Error:\s*/, '')).replace(/\.$/, '');
  // a space in the request line ends the URL early: the parser then looks for the version there
  const inUrl = err.code === 'HPE_INVALID_URL' || (err.code === 'HPE_INVALID_CONSTANT' && /^Expected HTTP\//.test(reason));
  const url = inUrl ? '; spaces and characters outside ASCII in the URL must be percent-encoded (as UTF-8)' : '';
  return `The request is not valid HTTP: ${reason}${url}.`;
}

const answeredHere = new WeakMap<Duplex, number>();

/** The id of the request being read or answered on a connection (requestContext notes it). */
const requestIds = new WeakMap<Duplex, string>();

/** Notes the id of the request on `socket` until its answer is sent, for an answer the server writes itself (a 408). */
export function noteRequestId(socket: Duplex, requestId: string, res: { once(event: 'finish', fn: () => void): unknown }): void {
  requestIds.set(socket, requestId);
  res.once('finish', () => {
    if (requestIds.get(socket) === requestId) requestIds.delete(socket);
  });
}

/**
 * The status answerClientError sent on `socket`, if it did: a request timed out mid-body (408) is
 * answered there, not by the application, whose response never gets sent.
 */
export const statusAnsweredByServer = (socket: Duplex): number | undefined => answeredHere.get(socket);

/** How long a client refused by answerClientError has to read its answer before the socket is destroyed. */
const CLOSE_GRACE_MS = 1_000;

/**
 * The HTTP or HTTPS server of `serve`, with explicit limits for slow clients (RELIABILITY.md I2):
 * a client must send its whole request head within HEADERS_TIMEOUT_MS and its whole request,
 * body included, within REQUEST_TIMEOUT_MS, else it gets a 408 and the connection is closed.
 * `limits` reads them back from the server.
 */
export function createHttpServer(
  config: Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs'> & Partial<Pick<Config, 'maxConnections' | 'maxConnectionsPerAddress'>>,
  handler: http.RequestListener,
  tls?: { cert: Buffer; key: Buffer },
  /** Told of each connection closed as it came (over a limit of limitConnections). */
  onRefused?: (refusal: { address: string; over: 'per_address' | 'total' }) => void,
): { server: http.Server; limits: () => ServerLimits; closeQuietConnections: () => number } {
  const interval = checkingIntervalMs(config);
  // The checking interval can only be given at creation; Node's own defaults for the others
  // (60 s for the head, 300 s for the request) are not left to chance either.
  const options: http.ServerOptions = { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: interval };
  // A TLS handshake gets no longer than a request head: the HTTP deadlines only start once it is
  // done, so a client that opens a connection and never starts TLS would otherwise keep it for
  // Node's 120 s, and without a limit on how many do so.
  const server: http.Server = tls ? https.createServer({ ...tls, ...options, handshakeTimeout: config.headersTimeoutMs }, handler) : http.createServer(options, handler);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.on('clientError', answerClientError);
  limitConnections(server, config.maxConnections ?? 0, config.maxConnectionsPerAddress ?? 0, onRefused);
  const connections = trackConnections(server, Boolean(tls));
  return {
    server,
    closeQuietConnections: connections.closeQuiet,
    limits: () => ({
      headersTimeoutMs: server.headersTimeout,
      requestTimeoutMs: server.requestTimeout,
      keepAliveTimeoutMs: server.keepAliveTimeout,
      checkingIntervalMs: interval,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress ?? 0,
      maxConnections: config.maxConnections ?? 0,
    }),
  };
}

/**
 * Bounds the connections a client can hold (a security tester's case: 19,950 connections trickling
 * a body each, no credentials needed, took every file descriptor, and the server answered nobody
 * for as long as REQUEST_TIMEOUT_MS let them stay): `perAddress` open at once from one address,
 * `total` in all (Node's maxConnections). A connection over either is closed as it comes, before
 * a byte is read. 0: no limit.
 */
function limitConnections(server: http.Server, total: number, perAddress: number, onRefused?: (refusal: { address: string; over: 'per_address' | 'total' }) => void): void {
  if (total > 0) {
    server.maxConnections = total;
    // Node closes it before any listener sees it
    server.on('drop', (data?: { remoteAddress?: string }) => onRefused?.({ address: clientOf(data?.remoteAddress ?? ''), over: 'total' }));
  }
  if (perAddress <= 0) return;
  const open = new Map<string, number>();
  // Counted before the server's own listeners run; a refused connection is destroyed here, and
  // theirs meet a closed socket (nothing is read from it).
  server.prependListener('connection', (socket: Socket) => {
    const address = clientOf(socket.remoteAddress ?? '');
    const n = open.get(address) ?? 0;
    if (n >= perAddress) {
      socket.destroy();
      onRefused?.({ address, over: 'per_address' });
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

/**
 * The server's connections and the requests in flight on each, so that a shutdown can close at
 * once every connection without a request in flight: idle keep-alive connections, connections that
 * never sent a request, and with TLS those that never finished (or never started) their handshake.
 * Node's closeIdleConnections() misses the last two, and each would hold the shutdown for its
 * whole deadline. Returns closeQuiet(), which destroys them and says how many.
 */
function trackConnections(server: http.Server, tls: boolean): { closeQuiet: () => number } {
  /** With TLS: TCP connections whose handshake has not completed. */
  const accepted = new Set<Socket>();
  /** Connections that carry HTTP, with the number of requests in flight on each. */
  const carrying = new Map<Socket, number>();
  const forget = (socket: Socket) => {
    accepted.delete(socket);
    carrying.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    if (tls) accepted.add(socket);
    else carrying.set(socket, 0);
    socket.once('close', () => forget(socket));
  });
  if (tls) {
    server.on('secureConnection', (socket: TLSSocket) => {
      // From here on the TLS socket stands for the connection; its TCP socket (Node keeps it as
      // the TLS socket's `_parent`) is not to be closed on its own.
      const tcp = (socket as TLSSocket & { _parent?: Socket })._parent;
      if (tcp) accepted.delete(tcp);
      carrying.set(socket, 0);
      socket.once('close', () => forget(socket));
    });
  }
  // before the application's listener: the count is up before anything can answer the request
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    if (!carrying.has(socket)) return;
    carrying.set(socket, carrying.get(socket)! + 1);
    res.once('close', () => {
      if (carrying.has(socket)) carrying.set(socket, carrying.get(socket)! - 1);
    });
  });
  return {
    closeQuiet() {
      let closed = 0;
      for (const [socket, inFlight] of carrying) {
        if (inFlight > 0) continue;
        socket.destroy();
        closed++;
      }
      for (const socket of accepted) {
        socket.destroy();
        closed++;
      }
      return closed;
    },
  };
}
