import { mkdirSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../clock.ts';
import { checkHeader, mappingByName, MappingError, requireMapped, resolveMapping, suggestMapping } from '../csv/columns.ts';
import { scanUpload } from '../csv/csv-worker-client.ts';
import { decodeKeyset, toPage, type Page } from '../cursor.ts';
import { AppError, invalid, notFound, tooLarge } from '../errors.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { newId } from '../ids.ts';
import type { Queue } from '../jobs/queue.ts';
import type { Db } from '../storage/db.ts';
import type { ImportsRepo } from './imports-repo.ts';
import { IMPORT_JOB } from './import-runner.ts';
import type { LedgersRepo } from './ledgers-repo.ts';
import type { CsvFormat, ImportJob, Rejection } from './model.ts';
import { ledgerLookup } from './require-ledger.ts';

export interface ImportServiceDeps {
  db: Db;
  clock: Clock;
  queue: Queue;
  audit: Audit;
  ledgers: LedgersRepo;
  imports: ImportsRepo;
  uploadsDir: string;
  maxApiContacts: number;
  kick: () => void;
}

/** A file received by the HTTP layer, still in its temporary place. */
export interface ReceivedFile {
  path: string;
  fileName: string;
}

export type ImportService = ReturnType<typeof createImportService>;

const uploadProblem = (status: 415 | 422, message: string, line?: number) =>
  status === 415 ? new AppError(415, 'unsupported_media_type', `The upload is not a CSV file: ${message}.`) : invalid(`The upload cannot be imported: ${message}.`, [{ path: 'file', message: line ? `line ${line}: ${message}` : message }]);

function parseMapping(text: string | undefined): unknown {
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid('mapping must be JSON, e.g. {"name":"Full Name","company":"Employer"}.', [{ path: 'mapping', message: 'is not valid JSON' }]);
  }
}

/** Import jobs (SPEC §4.4): creation from an API batch or a CSV upload, status, rejected rows. */
export function createImportService(d: ImportServiceDeps) {
  const requireLedger = ledgerLookup(d.ledgers);

  function createJob(by: Caller, orgId: string, job: Omit<Parameters<ImportsRepo['insertImport']>[0], 'createdAt' | 'createdBy'>, payload?: unknown[]): ImportJob {
    const created = d.db.tx(() => {
      requireLedger(orgId, job.ledgerId);
      const now = d.clock.now();
      // An API batch is small (≤ MAX_API_CONTACTS): it has slots of its own and never waits behind CSV imports.
      d.queue.enqueue(job.id, IMPORT_JOB, { maxAttempts: 5, lane: job.source === 'api' ? 'express' : 'bulk' });
      d.imports.insertImport({ ...job, createdAt: now, createdBy: by.actor.id });
      if (payload) d.imports.insertPayload(job.id, payload);
      d.audit.record(by, { orgId, action: 'import.created', target: { type: 'import', id: job.id }, data: { ledgerId: job.ledgerId, source: job.source, submitted: job.submitted, ...(job.fileName ? { fileName: job.fileName } : {}) } });
      return d.imports.findImport(job.id, now)!;
    });
    d.kick();
    return created;
  }

  /** Scans the file and works out how to read it; throws the 415/422 answer when it cannot be used. */
  async function inspect(file: ReceivedFile, mappingText: string | undefined, requireComplete: boolean) {
    const explicit = parseMapping(mappingText);
    const scan = await scanUpload(file.path);
    if (!scan.ok) throw uploadProblem(scan.status, scan.message, scan.line);
    try {
      checkHeader(scan.columns);
      const mapping = resolveMapping(scan.columns, explicit);
      if (requireComplete) requireMapped(mapping);
      return { scan, mapping };
    } catch (err) {
      if (err instanceof MappingError) throw invalid(`The upload cannot be imported: ${err.message}.`, [{ path: err.path, message: err.message }]);
      throw err;
    }
  }

  return {
    /** An API batch: stored as the job's payload and processed by the scheduler (202). */
    createApiImport(by: Caller, orgId: string, ledgerId: string, contacts: unknown[]): ImportJob {
      if (contacts.length > d.maxApiContacts)
        throw tooLarge(`At most ${d.maxApiContacts} contacts per call; upload larger sets as a CSV file (POST …/ledgers/${ledgerId}/imports).`);
      if (contacts.length === 0) throw invalid('contacts must not be empty.', [{ path: 'contacts', message: 'must contain at least one contact' }]);
      return createJob(by, orgId, { id: newId('imp'), ledgerId, source: 'api', fileName: null, filePath: null, format: null, submitted: contacts.length }, contacts);
    },

    /** A CSV upload: scanned, moved into the uploads folder, processed by the scheduler (202). */
    async createCsvImport(by: Caller, orgId: string, ledgerId: string, file: ReceivedFile, mappingText: string | undefined): Promise<ImportJob> {
      requireLedger(orgId, ledgerId);
      const { scan, mapping } = await inspect(file, mappingText, true);
      const id = newId('imp');
      mkdirSync(d.uploadsDir, { recursive: true, mode: 0o700 });
      const stored = join(d.uploadsDir, `${id}.csv`);
      renameSync(file.path, stored);
      const format: CsvFormat = { delimiter: scan.delimiter, dataStart: scan.dataStart, headerLines: scan.headerLines, columns: scan.columns, mapping };
      try {
        return createJob(by, orgId, { id, ledgerId, source: 'csv', fileName: file.fileName, filePath: stored, format, submitted: scan.rows });
      } catch (err) {
        unlinkSync(stored);
        throw err;
      }
    },

    /** What an upload would import: columns, the first rows, the suggested mapping; stores nothing. */
    async preview(orgId: string, ledgerId: string, file: ReceivedFile, mappingText: string | undefined) {
      requireLedger(orgId, ledgerId);
      const { scan, mapping } = await inspect(file, mappingText, false);
      const missing = (['name', 'company'] as const).filter((f) => mapping.fields[f] === undefined);
      return {
        columns: scan.columns,
        delimiter: scan.delimiter,
        rowCount: scan.rows,
        rows: scan.head.slice(0, 10),
        suggestedMapping: mappingByName(scan.columns, suggestMapping(scan.columns)),
        mapping: mappingByName(scan.columns, mapping),
        missing,
      };
    },

    list(orgId: string, ledgerId: string, limit: number, cursor?: string): Page<ImportJob> {
      requireLedger(orgId, ledgerId);
      return toPage(d.imports.listImports(ledgerId, limit, d.clock.now(), decodeKeyset(cursor, 'imports')), limit, 'imports', (i) => [i.createdAt, i.id]);
    },

    get(orgId: string, ledgerId: string, importId: string): ImportJob {
      requireLedger(orgId, ledgerId);
      const imp = d.imports.findImportOfLedger(ledgerId, importId, d.clock.now());
      if (!imp) throw notFound('import', importId);
      return imp;
    },

    /** Rejected rows in row order, page by page (for the errors CSV). */
    *rejections(importId: string): Generator<Rejection[]> {
      let after = 0;
      for (;;) {
        const page = d.imports.listRejections(importId, after, 1000);
        if (!page.length) return;
        yield page;
        after = page[page.length - 1]!.rowNo;
      }
    },
  };
}
