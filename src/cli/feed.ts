import { appendFileSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Config } from '../config.ts';
import { newId } from '../ids.ts';
import { openRuntime, type Runtime } from '../runtime.ts';
import { dataDirHolder, DataDirLockedError } from '../storage/lock.ts';
import { copyOwnerOnly, makeDirDurably, syncToDisk } from '../storage/durable-files.ts';
import { endsInsideALine, feedsDir, feedSummary, formatOfName, INBOX_TASK, inboxDir, inboxName, inboxSafeName, sidecarOf } from '../tracking/feed-files.ts';
import { EXIT_FAILURE, EXIT_OK, UsageError, type Io, type ParsedArgs } from './command.ts';
import { commandLogger, requireFile, requireInstallation, sayMigrated } from './common.ts';
import { refuseRootOnForeignFolder, rootOnForeignFolder } from './data-owner.ts';
import { interrupted, progress, waitForOwnJob, type Progress } from './progress.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Whether the process that held the data folder still holds it: its pid exists (signal 0 only
 * checks; EPERM means it exists under another user), or — one this process cannot see, in another
 * container — the folder is still held.
 */
function holding(held: { pid: number; holder: string }, dataDir: string): boolean {
  if (held.pid === 0) return dataDirHolder(dataDir) !== undefined;
  try {
    process.kill(held.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * `contact-ledger feed <file>`: ingests a person-data file (SPEC §5). With the server stopped it
 * runs the feed job itself and reports the counts; while a server holds the data folder it hands
 * the file to the server's inbox (copy, then an atomic rename) and waits for the outcome.
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  const file = args.positionals[0];
  if (!file || args.positionals.length !== 1) throw new UsageError('usage: contact-ledger feed <file>');
  requireFile(file);
  const format = formatOfName(file);
  if (!format) throw new UsageError(`${file}: use a .jsonl, .ndjson, .csv or .json file (optionally .gz)`);
  const bar = progress(io, basename(file));
  // SIGINT/SIGTERM end the wait, not the process: what this command holds is then let go in order
  // (a tester's feed, stopped with the server stopped, exited at once and left the lock, an
  // unchecked -wal and its job processing under its lease; import did it right)
  const stop = interrupted();
  try {
    return await feed(file, format, config, io, bar, stop);
  } finally {
    stop.dispose();
  }
}

async function feed(file: string, format: NonNullable<ReturnType<typeof formatOfName>>, config: Config, io: Io, bar: Progress, stop: ReturnType<typeof interrupted>): Promise<number> {
  requireInstallation(config);
  /**
   * Hands the file to the inbox of the process holding the data folder (`pid`) and waits for its
   * outcome. When that process ends first, this command opens the folder itself and ingests the
   * file — unless it runs as root on the service user's folder (`handTo`: that user), whose files
   * would then be root's: what it puts there is that user's, or the server may not read it (an
   * operator's case: it went nowhere, and this command waited for ever) — the inbox too, when it
   * has to be made (a reviewer's case).
   */
  const handOver = async (held: { pid: number; holder: string }, handTo?: { uid: number; gid: number }): Promise<number> => {
    const inbox = inboxDir(config.dataDir);
    const inboxThere = existsSync(inbox);
    mkdirSync(inbox, { recursive: true, mode: 0o700 });
    if (handTo && !inboxThere) chownSync(inbox, handTo.uid, handTo.gid);
    const name = inboxName(`${Date.now()}-${inboxSafeName(basename(file))}`); // the name the server keeps, which this command waits for
    const partial = join(inbox, `.${name}.partial`);
    rmSync(partial, { force: true }); // one a killed command left
    copyOwnerOnly(file, partial); // the owner's alone (0600), whatever the mode of the operator's file
    // A last line without a line break makes the inbox wait a minute for the rest of it (a writer
    // may have paused mid-record); this copy arrives whole by the rename, so it gets its line break.
    if (format !== 'json' && endsInsideALine(partial)) appendFileSync(partial, '\n');
    if (handTo) chownSync(partial, handTo.uid, handTo.gid);
    renameSync(partial, join(inbox, name));
    io.err(`a contact-ledger server or command (${held.holder}) holds the data folder: handed ${basename(file)} to its inbox as ${name}`);
    // Whoever holds the data folder may be another command that ends before it looks at the
    // inbox: when it is gone, this command opens the folder itself and its own scheduler takes
    // the file (a file left half-processed is put back into the inbox at start).
    let holder = held;
    let own: Runtime | undefined;
    try {
      for (let waited = 0; ; waited += 500) {
        // the counts (done/) or the reason (failed/) are written beside the file before it moves
        if (existsSync(join(inbox, 'done', name))) {
          bar.done();
          const result = join(inbox, 'done', name);
          io.out(`ingested ${name}: ${existsSync(sidecarOf(result, 'result')) ? readFileSync(sidecarOf(result, 'result'), 'utf8').trim() : 'its counts are in GET /api/ledger/v1/feed (source "inbox")'}`);
          return EXIT_OK;
        }
        if (existsSync(join(inbox, 'failed', name))) {
          bar.done();
          const failed = join(inbox, 'failed', name);
          const reason = existsSync(sidecarOf(failed, 'reason')) ? readFileSync(sidecarOf(failed, 'reason'), 'utf8').trim().replace(/\n/g, '; ') : 'see the server log';
          io.err(`the feed failed: ${reason}`);
          return EXIT_FAILURE;
        }
        if (!own && !holding(holder, config.dataDir)) {
          if (handTo) {
            // a server restarted meanwhile holds the folder again: wait for that one (a reviewer's case)
            const next = dataDirHolder(config.dataDir);
            if (next) {
              holder = next;
              continue;
            }
            bar.done();
            io.err(`the process that held the data folder (${holder.holder}) has ended before it ingested ${name}: the file is in its inbox, and the server ingests it when it starts (run as root, this command does not open the service user's folder itself)`);
            return EXIT_FAILURE;
          }
          try {
            own = await openRuntime(config, { log: commandLogger(io, config), bootstrap: false, onMigrated: sayMigrated(io) });
            own.scheduler.start({ tasks: [INBOX_TASK] });
            io.err(`the process that held the data folder (${holder.holder}) has ended: ingesting ${name} here`);
          } catch (again) {
            if (!(again instanceof DataDirLockedError)) throw again;
            holder = again;
          }
        }
        if (stop.fired) {
          bar.done();
          // the file stays in the inbox (one half ingested here is put back at the next start)
          io.err(own ? `interrupted: ${name} stays in the inbox, and the server ingests it when it starts` : `stopped waiting: ${name} is in the inbox of the process holding the data folder (${holder.holder}), which ingests it`);
          return EXIT_FAILURE;
        }
        bar.update(Math.round(waited / 1000), undefined, `s waiting for ${own ? 'the inbox' : 'the server'} to ingest ${name}`);
        await pause(500);
      }
    } finally {
      await own?.close();
    }
  };
  // as root on a folder the service user owns, the folder is never opened here: the file goes to a
  // running server, and without one the command is refused (data-owner.ts)
  const serviceUser = rootOnForeignFolder(config.dataDir);
  if (serviceUser) {
    const holder = dataDirHolder(config.dataDir);
    if (!holder) refuseRootOnForeignFolder(config.dataDir, 'feed');
    return handOver(holder!, serviceUser);
  }
  let rt;
  try {
    rt = await openRuntime(config, { log: commandLogger(io, config), bootstrap: false, onMigrated: sayMigrated(io) });
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err;
    // The server runs: give it the file through its inbox.
    return handOver(err);
  }
  try {
    if (stop.fired) {
      io.err(`interrupted before ${basename(file)} was taken in: nothing was ingested`);
      return EXIT_FAILURE;
    }
    await makeDirDurably(feedsDir(config.dataDir));
    const id = newId('feed');
    const stored = join(feedsDir(config.dataDir), `${id}.${format}`);
    copyOwnerOnly(file, stored); // the owner's alone (0600), whatever the mode of the operator's file
    await syncToDisk(stored); // on disk before the job that reads it commits
    await syncToDisk(feedsDir(config.dataDir));
    rt.tracking.feeds.createFeed('cli', stored, inboxSafeName(basename(file)), format, null, id);
    rt.scheduler.start({ tasks: [] });
    return await waitForOwnJob(
      io,
      stop,
      rt.scheduler,
      () => {
        const f = rt.tracking.feeds.get(id);
        bar.update(f.received, undefined, `records, ${f.invalid} invalid, ${f.jobChanges} job changes, ${f.infoChanges} info changes`);
        if (f.status !== 'completed' && f.status !== 'failed') return undefined;
        bar.done();
        const summary = feedSummary(f);
        if (f.status === 'failed') {
          io.err(`${summary}. ${f.message ?? ''}`);
          return EXIT_FAILURE;
        }
        io.out(summary);
        return EXIT_OK;
      },
      () => {
        bar.done();
        return `${id}: interrupted after ${rt.tracking.feeds.get(id).received} records; the job keeps its progress and the server finishes it when it starts`;
      },
    );
  } finally {
    await rt.close();
  }
}
