import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Clock } from '../clock.ts';
import { readUpload, type StartCsvWorker } from '../csv/csv-worker-client.ts';
import { CsvReadError, type CsvRow } from '../csv/read-rows.ts';
import { newId } from '../ids.ts';
import { beginWork, keepingLease, markWorking, renewBetweenChunks, type Lease } from '../jobs/queue.ts';
import { betweenChunks, byteBoundedEnd, ChunkSizer } from '../jobs/chunk-pacing.ts';
import { RejectionCap } from '../jobs/rejections.ts';
import type { Runner } from '../jobs/scheduler.ts';
import type { Db } from '../storage/db.ts';
import { validateContact, type ContactDraft } from './contact-input.ts';
import type { ContactsRepo } from './contacts-repo.ts';
import type { ImportsRepo } from './imports-repo.ts';
import type { LedgersRepo } from './ledgers-repo.ts';
import type { Contact, ImportJob, Rejection } from './model.ts';

export const IMPORT_JOB = 'import';

/** Rows the CSV worker parses per message (a transaction may take fewer, see ChunkSizer). */
export const CSV_BATCH_ROWS = 2000;

/** A row to store: `raw` is the row as submitted (API object or CSV cells), kept for the rejected-rows CSV. */
type Row = ({ rowNo: number; line: number | null; draft: ContactDraft; downloadedAs?: string } | { rowNo: number; line: number | null; reason: string }) & { raw: unknown };

/** What a committed chunk did with its rows (the import-rows metric). */
export interface ChunkCounts {
  imported: number;
  duplicates: number;
  invalid: number;
}

export interface RunnerDeps {
  db: Db;
  clock: Clock;
  contacts: ContactsRepo;
  imports: ImportsRepo;
  ledgers: LedgersRepo;
  /** Told after each chunk committed (a chunk that rolled back is processed again and told then). */
  onChunk?: (counts: ChunkCounts, importId: string) => void;
  /** Called inside the transaction that ends an import (completed or failed): the webhook outbox. */
  listeners?: ImportListener[];
  /** Starts the CSV reader thread (default: from this thread; the bulk thread asks the main thread). */
  startCsvWorker?: StartCsvWorker;
  /** Import-time matching (SPEC §5), by change tracking (on the bulk thread). */
  matcher?: ImportMatcher;
  /** Rejected rows kept for the errors CSV (default MAX_STORED_REJECTIONS). */
  maxStoredRejections?: number;
}

/** Hears about an import that ended, inside the transaction that ends it. */
export type ImportListener = (imp: ImportJob) => void;

/**
 * Matches contacts just stored to the people already known (SPEC §5: a contact known to work
 * elsewhere gets a job change at processing time). Runs inside the chunk's transaction.
 */
export type ImportMatcher = (contacts: Contact[]) => { matched: number; jobChanges: number };

class LedgerGone extends Error {}

/**
 * The import job runner (SPEC §4.4): rows are stored in chunks, each chunk one transaction that
 * re-checks the lease (fencing), inserts the good rows, records the rejected ones and moves the
 * resume point past them. A crash loses at most the chunk in flight, which is redone on resume,
 * so every row is imported exactly once and the counts add up.
 */
export function createImportRunner(d: RunnerDeps): Runner {
  /** Tells the listeners how the import ended; call inside the transaction that ends it. */
  const announce = (id: string) => {
    if (!d.listeners?.length) return;
    const done = d.imports.findImport(id, d.clock.now());
    if (done) for (const l of d.listeners) l(done);
  };

  function storeChunk(lease: Lease, imp: ImportJob, cap: RejectionCap, rows: Row[], cursor: { bytes: number; lines: number }): void {
    const counts = cap.chunk(() => d.db.bulkTx((): ChunkCounts => {
      lease.checkpoint();
      if (!d.ledgers.isLive(imp.ledgerId)) throw new LedgerGone();
      const now = d.clock.now();
      let imported = 0;
      let duplicates = 0;
      let invalid = 0;
      const stored: Contact[] = [];
      for (const row of rows) {
        if ('draft' in row) {
          const c = row.draft;
          // a row of a download of this very ledger whose contact is still in it: uploading the
          // download again (edited or not) must not double every contact without a referenceId
          if (row.downloadedAs !== undefined && d.contacts.findContact(imp.ledgerId, row.downloadedAs)) {
            duplicates++;
            const reason = `contact ${row.downloadedAs} (the row's id) is already in the ledger: this row is from a download of it`;
            cap.reject(() => d.imports.insertRejection(imp.id, { rowNo: row.rowNo, line: row.line, reason, kind: 'duplicate', raw: row.raw } satisfies Rejection));
            continue;
          }
          const contact = d.contacts.insertContact({
            id: newId('c'),
            ledgerId: imp.ledgerId,
            importId: imp.id,
            referenceId: c.referenceId ?? null,
            name: c.name,
            company: c.company,
            title: c.title ?? null,
            titleLevel: c.titleLevel ?? null,
            titleDomain: c.titleDomain ?? null,
            location: c.location ?? null,
            email: c.email ?? null,
            linkedin: c.linkedin ?? null,
            now,
          });
          if (contact) {
            stored.push(contact);
            imported++;
            continue;
          }
          duplicates++;
          const holder = c.referenceId === undefined ? undefined : d.contacts.findByReference(imp.ledgerId, c.referenceId);
          const reason =
            holder?.importId === imp.id
              ? `referenceId "${c.referenceId}" appears earlier in this import`
              : `referenceId "${c.referenceId}" is already in the ledger (contact ${holder?.id ?? 'unknown'})`;
          cap.reject(() => d.imports.insertRejection(imp.id, { rowNo: row.rowNo, line: row.line, reason, kind: 'duplicate', raw: row.raw } satisfies Rejection));
        } else {
          invalid++;
          cap.reject(() => d.imports.insertRejection(imp.id, { rowNo: row.rowNo, line: row.line, reason: row.reason, kind: 'invalid', raw: row.raw }));
        }
      }
      if (imported) d.ledgers.addContactCount(imp.ledgerId, imported);
      const found = stored.length && d.matcher ? d.matcher(stored) : { matched: 0, jobChanges: 0 };
      d.imports.addProgress(imp.id, {
        submitted: 0,
        seen: imp.cursorRows + rows.length,
        imported,
        duplicates,
        invalid,
        matched: found.matched,
        jobChanges: found.jobChanges,
        rows: rows.length,
        bytes: cursor.bytes,
        lines: cursor.lines,
      });
      imp.cursorRows += rows.length;
      return { imported, duplicates, invalid };
    }));
    d.onChunk?.(counts, imp.id);
  }

  async function runApi(lease: Lease, imp: ImportJob, cap: RejectionCap, stopping: () => boolean): Promise<'done' | 'stopped'> {
    const payload = d.imports.findPayload(imp.id) ?? [];
    const sizer = new ChunkSizer();
    while (imp.cursorRows < payload.length) {
      if (stopping()) return 'stopped';
      const from = imp.cursorRows;
      const rows: Row[] = payload.slice(from, from + sizer.next()).map((raw, i) => {
        const res = validateContact(raw);
        return res.ok ? { rowNo: from + i + 1, line: null, draft: res.draft, raw } : { rowNo: from + i + 1, line: null, reason: res.reason, raw };
      });
      sizer.timed(rows.length, () => storeChunk(lease, imp, cap, rows, { bytes: 0, lines: 0 }));
      await betweenChunks(d.db);
    }
    return 'done';
  }

  async function runCsv(lease: Lease, imp: ImportJob, cap: RejectionCap, stopping: () => boolean): Promise<'done' | 'stopped'> {
    const format = imp.format!;
    const from = imp.cursorBytes > 0 ? { bytes: imp.cursorBytes, lines: imp.cursorLines } : { bytes: format.dataStart, lines: format.headerLines };
    // at work (a process killed from here on counts as an attempt) once the CSV worker, loaded, begins to read
    const batches = readUpload(imp.filePath!, format, from, CSV_BATCH_ROWS, { startWorker: d.startCsvWorker, onReading: () => beginWork(d.db, lease) });
    const sizer = new ChunkSizer();
    // Parsed rows not stored yet: pending[at…]. A chunk is any prefix of them; its last row's end
    // is the resume point, so rows parsed but not stored when we stop are simply read again.
    let pending: CsvRow[] = [];
    let at = 0;
    const storeNext = (n: number) => {
      const base = imp.cursorRows;
      const part = pending.slice(at, byteBoundedEnd(pending, at, n));
      const rows: Row[] = part.map((r, i) =>
        'draft' in r ? { rowNo: base + i + 1, line: r.line, draft: r.draft, raw: r.raw, downloadedAs: r.downloadedAs } : { rowNo: base + i + 1, line: r.line, reason: r.reason, raw: r.raw },
      );
      const last = part[part.length - 1]!;
      sizer.timed(rows.length, () => storeChunk(lease, imp, cap, rows, { bytes: last.endBytes, lines: last.endLine }));
      at += part.length;
    };
    try {
      for (;;) {
        // the lease kept while the CSV worker parses (a batch of very wide rows may take longer than the lease)
        const next = await keepingLease(() => renewBetweenChunks(d.db, lease), batches.next());
        if (next.done) break;
        const batch = next.value;
        pending = at < pending.length ? pending.slice(at).concat(batch.rows) : batch.rows;
        at = 0;
        while (pending.length - at >= sizer.next()) {
          storeNext(sizer.next());
          // The next batch is often already waiting: without a macrotask turn here the loop would
          // continue on microtasks alone and starve HTTP requests for the whole import.
          await betweenChunks(d.db);
          if (stopping()) {
            await batches.return(undefined);
            return 'stopped';
          }
        }
      }
    } catch (err) {
      // The file cannot be read past some row: the rows read before it are stored first, so the
      // failed job keeps every row before the bad one (the message counts them).
      if (!(err instanceof CsvReadError)) {
        await batches.return(undefined); // the reader stops (for await did this when a chunk threw)
        throw err;
      }
      while (at < pending.length) {
        storeNext(sizer.next());
        await betweenChunks(d.db);
      }
      throw err;
    }
    while (at < pending.length) {
      storeNext(sizer.next());
      await betweenChunks(d.db);
      if (stopping() && at < pending.length) return 'stopped';
    }
    return 'done';
  }

  const removeUpload = (imp: ImportJob) => {
    if (imp.filePath) unlink(imp.filePath).catch(() => undefined);
  };

  function finish(lease: Lease, imp: ImportJob, message: string | null, failed: boolean): void {
    d.db.tx(() => {
      if (failed) {
        d.imports.markFailed(imp.id, message!, d.clock.now());
        lease.fail(message!);
      } else {
        d.imports.markFinished(imp.id, message, d.clock.now());
        lease.complete();
      }
      d.imports.deletePayload(imp.id);
      announce(imp.id);
    });
    removeUpload(imp);
  }

  return {
    pruneFinishedAfterMs: null, // the import's record (GET …/imports/:id) lives in import_jobs, which goes with the job row
    marksWork: true, // an API batch as its run starts; an upload once the CSV worker begins to read it (runCsv)
    async run(lease, ctl) {
      const imp = d.imports.findImport(lease.job.id, d.clock.now());
      if (!imp) {
        d.db.tx(() => lease.complete());
        return 'done';
      }
      d.db.tx(() => {
        lease.renew();
        if (imp.source === 'api') markWorking(lease); // the batch is read next (findPayload)
        d.imports.markStarted(imp.id, d.clock.now());
      });
      const stopping = () => ctl.stopping;
      if (imp.source === 'csv' && !existsSync(imp.filePath!)) {
        // e.g. a database restored without its uploads/ folder: retrying cannot bring the file back.
        const done = imp.cursorRows > 0 ? `; the ${imp.cursorRows} rows before were imported` : '';
        // named within the data folder: the job's message is read by the org's users, not the server's operator
        finish(lease, imp, `the uploaded file is no longer there (uploads/${basename(imp.filePath!)} in the data folder)${done}`, true);
        return 'done';
      }
      try {
        const cap = new RejectionCap(imp.duplicates + imp.invalid, d.maxStoredRejections);
        const outcome = imp.source === 'api' ? await runApi(lease, imp, cap, stopping) : await runCsv(lease, imp, cap, stopping);
        if (outcome === 'stopped') return 'stopped';
        finish(lease, imp, cap.note('rows'), false);
      } catch (err) {
        // Not `completed` (SPEC §4.4: every row imported or rejected), and the counts stay as they are.
        if (err instanceof LedgerGone) finish(lease, imp, `the ledger was deleted while the import ran; ${imp.cursorRows} of ${imp.submitted} rows had been processed`, true);
        else if (err instanceof CsvReadError) {
          const done = imp.cursorRows > 0 ? ` (the ${imp.cursorRows} rows before it were processed)` : '';
          finish(lease, imp, `the file cannot be read as CSV at ${err.message}${done}`, true);
        } else throw err;
      }
      return 'done';
    },
    failed(jobId, message) {
      const imp = d.imports.findImport(jobId, d.clock.now());
      d.imports.markFailed(jobId, `processing kept failing: ${message}`, d.clock.now());
      announce(jobId);
      if (imp?.filePath) setImmediate(() => removeUpload(imp));
    },
  };
}
