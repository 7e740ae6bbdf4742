import { readFileSync, statSync } from 'node:fs';
import type http from 'node:http';
import { createSecureContext as tlsContext } from 'node:tls';
import { buildApp } from '../app.ts';
import { ConfigError, environmentWarnings, unreadableFile, type Config } from '../config.ts';
import { createHttpServer } from '../http/server.ts';
import { backupsDir, bootstrapSuperuser, openRuntime, type Runtime } from '../runtime.ts';
import { backupsUnwritable } from '../ops/scheduled-backups.ts';
import { BULK_THREAD_JOBS } from '../bulk-thread/client.ts';
import { StartupError } from '../storage/db.ts';
import { BUILT_FROM, VERSION } from '../version.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Io, type ParsedArgs } from './command.ts';
import { refuseInsideInstallation } from './common.ts';
import { STOP_SIGNALS } from './progress.ts';

const DRAIN_TIMEOUT_MS = 10_000;

/** Resolves with the first of STOP_SIGNALS. */
function shutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals) => {
      for (const s of STOP_SIGNALS) process.off(s, on);
      resolve(sig);
    };
    for (const s of STOP_SIGNALS) process.on(s, on);
  });
}

/**
 * The exit status after a stop by SIGHUP: the one a death by it gives (128 + 1), but after the
 * shutdown in order. Not 0: systemd counts a SIGHUP death as a clean stop, and the unit's
 * Restart=on-failure left the service down after a `kill -HUP` (a reload by habit); with this
 * status it starts the server again, which reads its configuration anew (an operator tester's case).
 */
const EXIT_HANGUP = 129;

function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new StartupError(`port ${port} on ${host} is already in use; stop the other program or set PORT`)
          : err.code === 'EACCES'
            ? // a restart with the same settings cannot help (exit 2)
              new ConfigError(`no permission to listen on ${host}:${port}; use a port above 1023 or grant the capability (CAP_NET_BIND_SERVICE)`)
            : err.code === 'ENOTFOUND'
              ? // the name does not exist (not a name server that did not answer yet, EAI_AGAIN): a restart cannot help
                new ConfigError(`HOST ${host} cannot be resolved; set HOST to an address of this machine (0.0.0.0 for all)`)
              : err.code === 'EADDRNOTAVAIL'
                ? new StartupError(`HOST ${host} is not an address of this machine (yet); set HOST to one of its addresses (0.0.0.0 for all)`)
                : new StartupError(`cannot listen on ${host}:${port}: ${err.message}`),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/**
 * The certificate and key of TLS_CERT / TLS_KEY, checked to make a TLS context. A file that is not
 * one (a folder), a PEM that does not parse, a key that does not fit the certificate: configuration
 * errors (exit 2), which a restart does not mend — a service manager restarting on exit 1 would
 * loop (RestartPreventExitStatus=2, operations.md).
 */
function usableTls(certFile: string, keyFile: string): { cert: Buffer; key: Buffer } {
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw unreadableFile(name, file, err);
    }
  };
  const tls = { cert: read('TLS_CERT', certFile), key: read('TLS_KEY', keyFile) };
  try {
    tlsContext(tls);
  } catch (err) {
    const problem = tlsFilesProblem(tls, certFile, keyFile, (err as { code?: string }).code);
    throw new ConfigError(`TLS_CERT / TLS_KEY cannot be used: ${problem ? `${problem} (OpenSSL: ${(err as Error).message})` : (err as Error).message}`);
  }
  return tls;
}

/**
 * What is wrong with TLS files OpenSSL refused, in words, before its own message: a certificate
 * given as TLS_KEY read "DECODER routines::unsupported", files given the other way round "PEM
 * routines::no start line" (an operator tester's case). Read from the PEM block labels alone:
 * nothing of a key's content is said.
 */
function tlsFilesProblem(tls: { cert: Buffer; key: Buffer }, certFile: string, keyFile: string, code: string | undefined): string | undefined {
  const labels = (pem: Buffer) => [...pem.toString('latin1').matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1]!);
  const cert = labels(tls.cert);
  const key = labels(tls.key);
  const isKey = (label: string) => label.endsWith('PRIVATE KEY');
  if (!cert.includes('CERTIFICATE') && cert.some(isKey) && key.includes('CERTIFICATE')) return 'TLS_CERT holds a private key and TLS_KEY a certificate: swap them';
  if (!cert.includes('CERTIFICATE')) {
    if (cert.some(isKey)) return `TLS_CERT ${certFile} holds a private key where the certificate belongs`;
    if (!cert.length) return `TLS_CERT ${certFile} is no PEM text (a certificate in DER form converts with: openssl x509 -inform der -in ${certFile} -out cert.pem)`;
  }
  if (!key.some(isKey)) {
    if (key.includes('CERTIFICATE')) return `TLS_KEY ${keyFile} holds a certificate where its private key belongs`;
    if (!key.length) return `TLS_KEY ${keyFile} is no PEM text (a key in DER form converts with: openssl pkey -inform der -in ${keyFile} -out key.pem)`;
  }
  if (key.includes('ENCRYPTED PRIVATE KEY') || /^Proc-Type: 4,ENCRYPTED/m.test(tls.key.toString('latin1'))) {
    return `TLS_KEY ${keyFile} is protected by a passphrase, which the server cannot ask for: write it without one (openssl pkey -in ${keyFile} -out key.pem) and chmod 600 that file`;
  }
  if (code === 'ERR_OSSL_X509_KEY_VALUES_MISMATCH') return `TLS_KEY ${keyFile} is not the private key of the certificate in TLS_CERT ${certFile}`;
  return undefined;
}

/**
 * A TLS key every user of the machine may read is said at start (a warning, not a refusal: Docker
 * secrets are mounted 0444 by default, in a container of one user; an operator tester's case found
 * a 0644 key on a shared host accepted in silence). A group may read it (ssl-cert, a deploy hook's).
 */
function warnKeyOpenToOthers(log: Runtime['log'], keyFile: string): void {
  const mode = statSync(keyFile, { throwIfNoEntry: false })?.mode;
  if (mode === undefined || (mode & 0o007) === 0) return;
  const octal = (mode & 0o777).toString(8).padStart(3, '0');
  log.warn({ file: keyFile, mode: octal }, `TLS_KEY ${keyFile} may be read by every user of this machine (mode ${octal}): chmod 600 it, or 640 with a group of its own (docs/operations.md, HTTPS)`);
}

/**
 * Connections closed as they came (over MAX_CONNECTIONS_PER_ADDRESS or MAX_CONNECTIONS), said in
 * the log at most once a minute, with how many and the clients that had the most: a flood, or an
 * office behind one address that needs a higher limit, is then seen (they were invisible: a
 * reviewer's case). The first refusal after a quiet minute is said at once, the rest of a flood
 * once a minute while it lasts; `flush` says what is left (at shutdown).
 */
export function refusalLog(
  log: Pick<Runtime['log'], 'warn'>,
  timers: { set: (fn: () => void, ms: number) => unknown; clear: (t: unknown) => void } = { set: (fn, ms) => setTimeout(fn, ms).unref(), clear: (t) => clearTimeout(t as NodeJS.Timeout) },
): { refused: (refusal: { address: string; over: 'per_address' | 'total' }) => void; flush: () => void } {
  let counts = new Map<string, number>();
  let total = 0;
  let timer: unknown;
  const report = (): boolean => {
    if (total === 0) return false;
    const clients = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([client, refused]) => ({ client, refused }));
    log.warn({ refused: total, clients }, 'connections closed as they came: over MAX_CONNECTIONS_PER_ADDRESS or MAX_CONNECTIONS (docs/operations.md)');
    counts = new Map();
    total = 0;
    return true;
  };
  // a minute's window: at its end what came in it is said, and another begins if anything did
  const tick = () => {
    timer = report() ? timers.set(tick, 60_000) : undefined;
  };
  return {
    refused({ address, over }) {
      const key = over === 'total' ? `${address} (all connections in use)` : address;
      if (counts.size < 1000 || counts.has(key)) counts.set(key, (counts.get(key) ?? 0) + 1);
      total++;
      if (timer !== undefined) return;
      report();
      timer = timers.set(tick, 60_000);
    },
    flush() {
      if (timer !== undefined) timers.clear(timer);
      timer = undefined;
      report();
    },
  };
}

/**
 * Builds the application and listens, then makes the first superuser of a new installation and
 * prints it; loads the bulk thread when a job of it is waiting. The caller closes the runtime when this throws.
 */
async function startServing(rt: Runtime, config: Config, tls: { cert: Buffer; key: Buffer } | undefined, io: Io) {
  const { log } = rt;
  const { app } = buildApp(rt);
  // Slow clients cannot hold connections forever (RELIABILITY.md I2), nor take them all.
  const refusals = refusalLog(log);
  const http = createHttpServer(config, app.callback(), tls, refusals.refused);
  http.server.once('close', refusals.flush);
  await listen(http.server, config.port, config.host);
  try {
    // The first superuser is made once the server listens: a start that cannot listen (a port in
    // use) made it and printed its password, which the next start no longer showed (an operator's case).
    await bootstrapSuperuser(rt, config);
    if (rt.bootstrap?.generatedPassword) {
      // Printed once, on the first start only; the operator should change it (PATCH /users/me).
      io.err(
        [
          '',
          '  contact-ledger created the first superuser:',
          `    e-mail:   ${rt.bootstrap.email}`,
          `    password: ${rt.bootstrap.generatedPassword}`,
          '  This password is shown only now. Sign in and change it.',
          '',
        ].join('\n'),
      );
    } else if (rt.bootstrap) {
      log.info({ email: rt.bootstrap.email }, 'created the first superuser from CONTACT_LEDGER_ADMIN_EMAIL');
    } else if (config.adminEmail !== undefined || config.adminPassword !== undefined) {
      // read at the first start only: an operator who set them to reset a password was told nothing (an operator tester's case)
      log.info('CONTACT_LEDGER_ADMIN_EMAIL / CONTACT_LEDGER_ADMIN_PASSWORD are read on the first start only: this installation has users, so they were not used (to set a password: contact-ledger user passwd, with the server stopped)');
    }
    // a job the bulk thread runs is waiting (accepted before, or a previous process's): the thread
    // is loaded before the job is claimed, so that a claim, which counts an attempt, is followed by
    // work within moments (BulkThread.warm)
    if (rt.queue.hasUnfinished(BULK_THREAD_JOBS)) await rt.bulkThread.warm();
  } catch (err) {
    http.server.close();
    throw err;
  }
  return { ...http, tls: Boolean(tls) };
}

export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  refuseArguments(args);
  const tls = config.tlsCert && config.tlsKey ? usableTls(config.tlsCert, config.tlsKey) : undefined;
  // Listen for signals first: a stop requested while starting is honoured once started.
  const stopRequested = shutdownSignal();
  refuseInsideInstallation(config);
  const rt = await openRuntime(config, { bootstrap: false });
  const { log } = rt;
  for (const { variable, meant } of environmentWarnings(io.env)) {
    log.warn({ variable, meant }, `the environment variable ${variable} is not read; if it is meant as ${meant}, rename it`);
  }
  if (tls) warnKeyOpenToOthers(log, config.tlsKey!);
  // six fields: node-cron reads the first as seconds ("0 3 * * * *" is hourly at minute 3; with BACKUP_KEEP=14, 14 hours of backups: an operator tester's case)
  if (config.backupCron?.split(/\s+/).length === 6) log.warn({ BACKUP_CRON: config.backupCron }, 'BACKUP_CRON has six fields: the first is read as seconds, the second as minutes (five fields, "0 3 * * *", are minute, hour, day, month, weekday)');
  const backupsProblem = config.backupCron ? backupsUnwritable(backupsDir(config.dataDir)) : undefined;
  if (backupsProblem) log.warn({ dir: backupsDir(config.dataDir) }, backupsProblem);
  // Whatever fails from here until the server listens closes the runtime (its threads, the data
  // folder's lock) before the error is reported: a process left open with nothing listening would
  // hold the folder and wait for a signal that is already taken (a tester's bad HOST).
  let started: Awaited<ReturnType<typeof startServing>>;
  try {
    started = await startServing(rt, config, tls, io);
  } catch (err) {
    await rt.close();
    throw err;
  }
  const { server, closeQuietConnections, tls: https } = started;
  rt.scheduler.start();
  // the schedule as node-cron reads it, in UTC: an expression meant in local time, or a typo that
  // is still a valid expression, shows here and not at the first backup (an operator tester's case)
  const nextBackup = rt.scheduler.nextRun('backup');
  if (nextBackup) log.info({ BACKUP_CRON: config.backupCron, next: nextBackup.toISOString(), keep: config.backupKeep }, `scheduled backups: the next at ${nextBackup.toISOString()} (UTC)`);
  // nothing waiting: the thread is loaded now all the same, in the background, so that the first
  // import after a start does not wait for it (~0.5 s on an idle machine, 1.4–3 s on a busy one:
  // a tester's first batch, where SPEC §4 wants one within a second)
  void rt.bulkThread.warm();
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  log.info({ version: VERSION, ...(BUILT_FROM ? { commit: BUILT_FROM } : {}), host: config.host, port, dataDir: config.dataDir, baseUrl: config.baseUrl, https, limits: started.limits() }, 'listening');
  if (config.host === '127.0.0.1' || config.host === 'localhost' || config.host === '::1') {
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    io.err(`contact-ledger ${VERSION} listening on ${https ? 'https' : 'http'}://${host}:${port} (only this machine; set HOST=0.0.0.0 to accept other machines)`);
  }

  const signal = await stopRequested;
  log.info({ signal }, signal === 'SIGHUP' ? `shutting down (SIGHUP: the configuration is read only at start; the exit status ${EXIT_HANGUP} lets a service manager that restarts on failure start it again)` : 'shutting down');
  rt.state.shuttingDown = true;
  // no job is claimed and no periodic task starts while the last requests drain (a backup did, and
  // the stop waited for it); what runs finishes its chunk, and rt.close() waits for it
  void rt.scheduler.stop();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Connections without a request in flight close now; the others once their answer is out.
  closeQuietConnections();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    closed.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), DRAIN_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    log.warn('in-flight requests did not finish in time; closing their connections');
    server.closeAllConnections();
  }
  await rt.close();
  log.info('stopped');
  log.flush();
  return timedOut ? EXIT_FAILURE : signal === 'SIGHUP' ? EXIT_HANGUP : EXIT_OK;
}
