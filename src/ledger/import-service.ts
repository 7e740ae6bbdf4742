import { createHash } from 'node:crypto';
import { statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../clock.ts';
import { checkMappedColumns, endsWithRejectionColumns, findAmbiguities, withoutFields, type Ambiguity, mappedColumns, mappingByName, MappingError, nameParts, ownColumns, rejectedRowsHeader, REJECTION_COLUMNS, requireMapped, resolveMapping, suggestMapping, type ColumnMapping } from '../csv/columns.ts';
import { scanUpload } from '../csv/csv-worker-client.ts';
import { namedWidth } from '../csv/read-rows.ts';
import type { ScanFailure, ScanResult } from '../csv/scan.ts';
import { unescapeFormula } from '../csv/write.ts';
import type { Cursors, Page } from '../cursor.ts';
import { AppError, conflict, idempotencyKeyReused, invalid, notFound, tooLarge } from '../errors.ts';
import { canonicalJson, firstDuplicateKey, someJsonValue } from '../exact-json.ts';
import { sha256FileHexes } from '../crypto.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { newId } from '../ids.ts';
import type { Queue } from '../jobs/queue.ts';
import type { JobLane } from '../jobs/queue-repo.ts';
import { deleteInChunks } from '../jobs/chunk-pacing.ts';
import type { Db } from '../storage/db.ts';
import { makeDirDurably, moveDurably } from '../storage/durable-files.ts';
import { sameRequest, type Idempotency, type ImportsRepo, type NewImport } from './imports-repo.ts';
import { IMPORT_JOB } from './import-runner.ts';
import type { LedgersRepo } from './ledgers-repo.ts';
import { DOWNLOAD_HEADER, type CsvFormat, type ImportJob, type Rejection } from './model.ts';
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
  /** The largest API batch body: an upload no bigger, of no more rows than a batch, is as small as one (express lane). */
  maxJsonBytes: number;
  kick: () => void;
  cursors: Cursors;
  /** An import ended as it was created (an upload that cannot be read), inside that transaction: the webhook outbox. */
  onEndedAtOnce?: (job: ImportJob) => void;
}

/** A file received by the HTTP layer, still in its temporary place. */
export interface ReceivedFile {
  path: string;
  fileName: string;
}

export type ImportService = ReturnType<typeof createImportService>;

/** A job created by a request, or the one an earlier request with the same Idempotency-Key created. */
export interface Created {
  job: ImportJob;
  replayed: boolean;
}

/** An upload that can be imported: its scan and how its columns map to contact fields. */
interface Inspected {
  scan: ScanResult;
  mapping: ColumnMapping;
  /** A rejected-rows CSV of ours uploaded again (isOwnRejectedRows). */
  ours: boolean;
  /** A download of ours uploaded again (isOwnDownload). */
  download: boolean;
  /** Fields left out of `mapping` because two columns or more could be them (a preview's only: an import refuses them). */
  ambiguous: Ambiguity[];
}

const DOWNLOAD_COLUMNS: ReadonlySet<string> = new Set(DOWNLOAD_HEADER);

/**
 * A download of ours uploaded again (into another ledger, another installation): its header is
 * the download's fixed one, or — edited in a spreadsheet, columns taken out or moved — every
 * column keeps the name the download gave it (unnamed ones aside, two at least) and no cell begins
 * with = + - @ unescaped (the download escapes every one). Its cells carry our formula escaping
 * (`'-Ann`), which the reader takes off — imported as they were, not with a `'` in a name that is
 * never modified again. Until the thirty-sixth session only the whole header counted, and a
 * download with the columns one did not need taken out (a tester's case) kept its `'`s for good.
 * A file of one's own that looks the same loses a `'` before = + - @ too, as a spreadsheet shows
 * `'=x` typed in a cell: `=x`.
 */
function isOwnDownload(scan: ScanResult): boolean {
  // a cell beginning with = + - @ unescaped: a download taken with escapeFormulas=false (or edited),
  // whose texts are as they are — a `'` before such a character is the contact's own (until the
  // forty-third session the whole header alone counted, and such a download's `'+Bob` became `+Bob`)
  if (scan.formulaCells) return false;
  const { columns } = scan;
  if (columns.length === DOWNLOAD_HEADER.length && DOWNLOAD_HEADER.every((c, i) => columns[i] === c)) return true;
  const named = columns.filter((c) => c !== '');
  return named.length >= 2 && new Set(named).size === named.length && named.every((c) => DOWNLOAD_COLUMNS.has(c));
}

/**
 * The header ends in unnamed columns (`…,Email,`) and most of the first rows (the
 * preview's) hold text in them: columns without a name, not a trailing separator — their rows are
 * imported, the unnamed cells left out, as the wizard's preview shows them ("(column 7)"). A web
 * tester's Salesforce export had one on every row, and every row was rejected as "the row has 7
 * columns, the header has 6" after a preview of 63 importable rows. Text there in a few rows of a
 * file whose first rows mostly have none is still a broken row (an unquoted comma that shifted
 * the cells).
 */
function hasUnnamedColumns(scan: ScanResult, ours: boolean): boolean {
  const own = ownColumns({ columns: scan.columns, formulasEscaped: ours });
  const named = namedWidth(own);
  // (a row of a rejected-rows CSV of ours is its own cells, then our reason and line)
  const ownCells = (row: string[]) => (ours ? row.slice(0, -REJECTION_COLUMNS.length) : row);
  const filled = scan.head.filter((row) => ownCells(row).slice(named, own.length).some((c) => c.trim() !== '')).length;
  return named < own.length && filled * 2 > scan.head.length;
}

/** The refusal of an upload; `errors` gives the reason alone at `file`, for a client that says it in its own words (the web app's wizard). */
const uploadProblem = (status: 415 | 422, message: string, line?: number) =>
  status === 415
    ? new AppError(415, 'unsupported_media_type', `The upload is not a CSV file: ${message}.`, { errors: [{ path: 'file', message }] })
    : invalid(`The upload cannot be imported: ${message}.`, [{ path: 'file', message: line && !message.includes(`line ${line}`) ? `line ${line}: ${message}` : message }]);

function parseMapping(sent: string | undefined): unknown {
  // a mapping file written with a byte order mark (Notepad, PowerShell 5) is JSON all the same, as a CSV with one is a CSV
  const text = sent?.replace(/^\uFEFF/, '');
  if (text === undefined || text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw invalid('mapping must be JSON, e.g. {"name":"Full Name","company":"Employer"}.', [{ path: 'mapping', message: 'is not valid JSON' }]);
  }
  // field → column name, or [first, last] for name: two levels below it at most. A deeper value
  // is no mapping, and the fingerprint of an Idempotency-Key (canonicalJson) recursed through it
  // out of stack (a tester's 10,000 levels: a 500)
  if (someJsonValue(value, (_, depth) => depth > 2)) throw invalid('mapping must be a JSON object of field → column name (name may be [first name column, last name column]).', [{ path: 'mapping', message: 'nests deeper than a mapping does' }]);
  const twice = firstDuplicateKey(text);
  if (twice !== undefined) throw invalid(`mapping gives "${twice.slice(0, 100)}" more than once; map each field to one column.`, [{ path: `mapping.${twice.slice(0, 100)}`, message: 'is given more than once' }]);
  return value;
}

/** Import jobs (SPEC §4.4): creation from an API batch or a CSV upload, status, rejected rows. */
export function createImportService(d: ImportServiceDeps) {
  const requireLedger = ledgerLookup(d.ledgers);

  /**
   * Creates an import job and its queue entry in one transaction. With an Idempotency-Key that
   * the caller has sent to this ledger before, nothing is created: the earlier job is returned (`replayed`) when the
   * request is the same, and 422 answers a different request under the same key. With `failure`,
   * the job is `failed` from the start, with that message (nothing to process). `payload`: an API
   * batch's contacts; `lane`: the scheduler's lane (docs/decisions.md, the scheduler).
   */
  function createJob(by: Caller, orgId: string, job: Omit<NewImport, 'createdAt' | 'createdBy'>, opts: { payload?: unknown[]; failure?: string; lane?: JobLane } = {}): Created {
    const { payload, failure, lane = 'bulk' } = opts;
    const created = d.db.tx((): Created => {
      requireLedger(orgId, job.ledgerId);
      const now = d.clock.now();
      if (job.idempotency) {
        const earlier = d.imports.findByIdempotencyKey(job.ledgerId, by.actor.id, job.idempotency.key);
        if (earlier) {
          if (!sameRequest(earlier.requestHash, job.idempotency)) {
            throw idempotencyKeyReused();
          }
          return { job: d.imports.findImport(earlier.id, now)!, replayed: true };
        }
      }
      // An API batch is small (≤ MAX_API_CONTACTS), and so is an upload no bigger than one: they
      // have slots of their own and never wait behind large imports, feeds and purges.
      d.queue.enqueue(job.id, IMPORT_JOB, { maxAttempts: 5, lane });
      d.imports.insertImport({ ...job, createdAt: now, createdBy: by.actor.id });
      if (payload) d.imports.insertPayload(job.id, payload);
      d.audit.record(by, { orgId, action: 'import.created', target: { type: 'import', id: job.id }, data: { ledgerId: job.ledgerId, source: job.source, submitted: job.submitted, ...(job.fileName ? { fileName: job.fileName } : {}) } });
      if (failure !== undefined) {
        d.queue.failAtOnce(job.id, failure);
        d.imports.markFailed(job.id, failure, now);
      }
      const stored = d.imports.findImport(job.id, now)!;
      if (failure !== undefined) d.onEndedAtOnce?.(stored);
      return { job: stored, replayed: false };
    });
    if (!created.replayed && failure === undefined) d.kick();
    return created;
  }

  /**
   * A rejected-rows CSV of ours come back (fixed): a file whose header is one this organization's
   * rejected-rows CSVs were written with. Its name alone — last columns `reason`, `line` — would
   * take a file of the user's own with such columns for one of ours, and its next rejected-rows
   * CSV would replace their values with ours (seventeenth session).
   */
  function isOwnRejectedRows(orgId: string, scan: ScanResult): boolean {
    const { columns } = scan;
    // the line numbers we wrote are bare numbers: a `line` column with anything else is the file's own
    if (!endsWithRejectionColumns(columns) || !scan.lastCellsNumbers) return false;
    const header = columns.map(unescapeFormula);
    for (const format of d.imports.csvFormatsOfOrg(orgId)) {
      const written = rejectedRowsHeader(format);
      if (written.length === header.length && written.every((c, i) => unescapeFormula(c) === header[i])) return true;
    }
    return false;
  }

  /**
   * Scans the file and works out how to read it; throws the 415/422 answer when it cannot be used —
   * except, for an import, a text that cannot be read as CSV: its job fails instead (SPEC §4.3), so
   * that failure is returned. A preview is where the mapping is chosen: it is not refused for
   * required fields no column gives, nor for a field two columns could be (Inspected.ambiguous).
   */
  async function inspect(orgId: string, file: ReceivedFile, explicit: unknown, mode: 'preview'): Promise<Inspected>;
  async function inspect(orgId: string, file: ReceivedFile, explicit: unknown, mode: 'import'): Promise<Inspected | { unreadable: ScanFailure }>;
  async function inspect(orgId: string, file: ReceivedFile, explicit: unknown, mode: 'preview' | 'import'): Promise<Inspected | { unreadable: ScanFailure }> {
    const scanned = await scanUpload(file.path);
    if (!scanned.ok) {
      if (scanned.unreadable && mode === 'import') return { unreadable: scanned };
      throw uploadProblem(scanned.status, scanned.message, scanned.line);
    }
    const read = (ours: boolean): Inspected => {
      // a rejected-rows CSV's header names had their formula escaping too ("'@handle"): a mapping names the column as first sent
      const scan = ours ? { ...scanned, columns: scanned.columns.map(unescapeFormula) } : scanned;
      // (our annotation may repeat a name of the file's own, its `Reason` column: no contact field reads either)
      const resolved = resolveMapping(scan.columns, explicit);
      if (mode === 'import') checkMappedColumns(scan.columns, resolved);
      // the preview leaves a field two columns could be out of its mapping, and says which compete (a
      // web tester's `name,company,email,E-mail` was refused at preview, and the wizard never showed
      // the mapping step where the column is chosen)
      const ambiguous = mode === 'preview' ? findAmbiguities(scan.columns, resolved) : [];
      const mapping = ambiguous.length ? withoutFields(resolved, ambiguous.map((a) => a.field)) : resolved;
      return { scan, mapping, ambiguous, ours, download: !ours && isOwnDownload(scan) };
    };
    try {
      let inspected = read(isOwnRejectedRows(orgId, scanned));
      // a mapping that reads the reason or line column says they hold the file's own data: not ours
      const annotation = scanned.columns.length - REJECTION_COLUMNS.length;
      if (inspected.ours && mappedColumns(inspected.mapping).some((i) => i >= annotation)) inspected = read(false);
      if (mode === 'import') requireMapped(inspected.mapping, inspected.scan.delimiter, inspected.scan.tiedWith);
      return inspected;
    } catch (err) {
      if (err instanceof MappingError) throw invalid(`The upload cannot be imported: ${err.message}.`, [{ path: err.path, message: err.message }]);
      throw err;
    }
  }

  /** An import of the ledger (404 otherwise). */
  function importOf(orgId: string, ledgerId: string, importId: string): ImportJob {
    requireLedger(orgId, ledgerId);
    const imp = d.imports.findImportOfLedger(ledgerId, importId, d.clock.now());
    if (!imp) throw notFound('import', importId);
    return imp;
  }

  return {
    /** An API batch: stored as the job's payload and processed by the scheduler (202). */
    createApiImport(by: Caller, orgId: string, ledgerId: string, contacts: unknown[], idempotencyKey?: string): Created {
      if (contacts.length > d.maxApiContacts)
        throw tooLarge(`At most ${d.maxApiContacts} contacts per call; upload larger sets as a CSV file (POST …/ledgers/${ledgerId}/imports).`);
      if (contacts.length === 0) throw invalid('contacts must not be empty.', [{ path: 'contacts', message: 'must contain at least one contact' }]);
      const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
      // (JSON.stringify: the fingerprint before 239622b, which jobs stored then still have)
      const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey, requestHash: sha256(canonicalJson(contacts)), earlierHashes: [sha256(JSON.stringify(contacts))] };
      return createJob(by, orgId, { id: newId('imp'), ledgerId, source: 'api', fileName: null, filePath: null, format: null, submitted: contacts.length, idempotency }, { payload: contacts, lane: 'express' });
    },

    /** A CSV upload: scanned, moved into the uploads folder, processed by the scheduler (202). */
    async createCsvImport(by: Caller, orgId: string, ledgerId: string, file: ReceivedFile, mappingText: string | undefined, idempotencyKey?: string): Promise<Created> {
      requireLedger(orgId, ledgerId);
      // The request's fingerprint: the file's bytes and the mapping as a value, whatever the order of its keys (hashed only when a key came with it).
      const explicit = parseMapping(mappingText);
      let idempotency: Idempotency | undefined;
      if (idempotencyKey !== undefined) {
        // (the mapping as sent: the fingerprint before 239622b, which jobs stored then still have)
        const [requestHash, asSent] = await sha256FileHexes(file.path, 'mapping', [explicit === undefined ? '' : canonicalJson(explicit), mappingText ?? '']);
        idempotency = { key: idempotencyKey, requestHash: requestHash!, earlierHashes: [asSent!] };
      }
      if (idempotency) {
        const earlier = d.imports.findByIdempotencyKey(ledgerId, by.actor.id, idempotency.key);
        // Replayed before scanning (the answer does not depend on the file being readable now).
        if (earlier && sameRequest(earlier.requestHash, idempotency)) return { job: d.imports.findImport(earlier.id, d.clock.now())!, replayed: true };
      }
      const inspected = await inspect(orgId, file, explicit, 'import');
      if ('unreadable' in inspected) {
        // SPEC §4.3: a file that cannot be parsed fails its job with a message naming the line. Found
        // before any row was imported, so none is: the fixed file can be uploaded again as a whole.
        const failure = `the file cannot be read: ${inspected.unreadable.message} (nothing was imported)`;
        return createJob(by, orgId, { id: newId('imp'), ledgerId, source: 'csv', fileName: file.fileName, filePath: null, format: null, submitted: 0, idempotency }, { failure });
      }
      const { scan, mapping, ours, download } = inspected;
      // as small as an API batch: no more rows, no more bytes (a tester's 2-row upload waited 14–21 s
      // behind two other organizations' 100,000-row imports)
      const lane: JobLane = scan.rows <= d.maxApiContacts && statSync(file.path).size <= d.maxJsonBytes ? 'express' : 'bulk';
      const id = newId('imp');
      await makeDirDurably(d.uploadsDir);
      const stored = join(d.uploadsDir, `${id}.csv`);
      await moveDurably(file.path, stored); // on disk before the job that reads it commits
      const format: CsvFormat = {
        delimiter: scan.delimiter,
        dataStart: scan.dataStart,
        headerLines: scan.headerLines,
        columns: scan.columns,
        mapping,
        ...(ours ? { formulasEscaped: true } : {}),
        ...(download ? { download: true } : {}),
        ...(hasUnnamedColumns(scan, ours) ? { unnamedColumns: true } : {}),
        ...(ours || download ? { rawUnescaped: true } : {}),
      };
      try {
        const created = createJob(by, orgId, { id, ledgerId, source: 'csv', fileName: file.fileName, filePath: stored, format, submitted: scan.rows, idempotency }, { lane });
        if (created.replayed) unlinkSync(stored); // another request with the key won meanwhile
        return created;
      } catch (err) {
        unlinkSync(stored);
        throw err;
      }
    },

    /**
     * What an upload would import: columns, the first rows, the mapping; stores nothing. A field
     * two columns or more could be is left out of `mapping` (and of `suggestedMapping`, whose
     * import would be refused) and named in `ambiguous` with the columns that compete.
     */
    async preview(orgId: string, ledgerId: string, file: ReceivedFile, mappingText: string | undefined) {
      requireLedger(orgId, ledgerId);
      const { scan, mapping, ambiguous, ours, download } = await inspect(orgId, file, parseMapping(mappingText), 'preview');
      const missing = (['name', 'company'] as const).filter((f) => mapping.fields[f] === undefined);
      // the rows as the import reads them: a rejected-rows CSV's or a download's cells without their formula escaping
      const rows = scan.head.slice(0, 10);
      const suggested = suggestMapping(scan.columns);
      const unsettled = findAmbiguities(scan.columns, suggested).map((a) => a.field);
      return {
        columns: scan.columns,
        delimiter: scan.delimiter,
        rowCount: scan.rows,
        rows: ours || download ? rows.map((r) => r.map(unescapeFormula)) : rows,
        suggestedMapping: mappingByName(scan.columns, withoutFields(suggested, unsettled)),
        mapping: mappingByName(scan.columns, mapping),
        missing,
        ambiguous,
        nameParts: nameParts(scan.columns),
      };
    },

    list(orgId: string, ledgerId: string, limit: number, cursor?: string): Page<ImportJob> {
      requireLedger(orgId, ledgerId);
      const list = `imports:${ledgerId}`;
      return d.cursors.toPage(d.imports.listImports(ledgerId, limit, d.clock.now(), d.cursors.decodeKeyset(cursor, list)), limit, list, (i) => [i.createdAt, i.id]);
    },

    get: importOf,

    /**
     * Deletes an ended import's rejected rows (they hold whole refused rows: an erasure request),
     * in short chunks; the job keeps its counts. An import still running is refused (409).
     */
    async deleteRejections(by: Caller, orgId: string, ledgerId: string, importId: string): Promise<number> {
      const imp = importOf(orgId, ledgerId, importId);
      if (imp.status === 'pending' || imp.status === 'processing') throw conflict('import_in_progress', 'The import is still running; its rejected rows can be deleted once it has ended.');
      const { deleted } = await deleteInChunks(d.db, [(n) => d.imports.deleteRejections(importId, n)]);
      // nothing deleted (none left, or deleted before): nothing to audit
      if (deleted) d.db.tx(() => d.audit.record(by, { orgId, action: 'import.rejections_deleted', target: { type: 'import', id: importId }, data: { ledgerId, deleted } }));
      return deleted;
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
