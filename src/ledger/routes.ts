import { Readable } from 'node:stream';
import type Koa from 'koa';
import { csvCell, csvHeader, csvLines, unescapeFormula } from '../csv/write.ts';
import { isoZ, isoZOrNull } from '../clock.ts';
import { badRequest, invalid } from '../errors.ts';
import { exactIntegerText } from '../exact-json.ts';
import { validateContact } from './contact-input.ts';
import { ownColumns, rejectedRowsHeader, REJECTION_COLUMNS } from '../csv/columns.ts';
import { pageOf, pageQuery } from '../http/common-schemas.ts';
import { SINCE_READ_503, type ApiRouter } from '../http/route.ts';
import { answerJob, idempotencyKeyHeader, jobAnswers } from '../http/idempotency.ts';
import { clientGone } from '../http/request-context.ts';
import { receiveUpload } from '../http/upload.ts';
import type { FileSpace } from '../storage/free-space.ts';
import { MAX_BULK_DELETE, type ContactService } from './contact-service.ts';
import type { Created, ImportService } from './import-service.ts';
import type { LedgerService } from './ledger-service.ts';
import type { DownloadRow } from './contacts-repo.ts';
import type { ImportJob, Rejection } from './model.ts';
import { CONTACT_FIELDS, DOWNLOAD_HEADER } from './model.ts';
import {
  BulkDeleteAnswer,
  ContactAnswer,
  ContactListAnswer,
  ImportJobAnswer,
  ImportJobPage,
  ImportPreviewAnswer,
  LEDGER_PREFIX,
  LedgerAnswer,
  LedgerPage,
  ledgerUrl,
  presentContact,
  presentImport,
  presentLedger,
} from './presenters.ts';
import * as S from './schemas.ts';

export { LEDGER_PREFIX };

export interface LedgerServices {
  ledgers: LedgerService;
  contacts: ContactService;
  imports: ImportService;
}

export interface LedgerRouteOptions {
  baseUrl: string;
  uploadTmpDir: string;
  maxUploadBytes: number;
  /** Told of uploads refused for lack of space and of uploads stored (/readyz's diskSpace). */
  uploadSpace?: FileSpace;
  now: () => number;
}

/**
 * A page of the download as CSV lines in UTF-8, cell by cell in DOWNLOAD_HEADER's order (no array
 * per row). Each line is written to the buffer as soon as it is made: one string of a whole page,
 * built by concatenation, would cost as much again to flatten and encode.
 */
function downloadLines(page: DownloadRow[], escape: boolean, d: string): Buffer {
  let buf = Buffer.allocUnsafe(Math.max(page.length * 512, 4096));
  let at = 0;
  for (const r of page) {
    // text cells are always quoted (csvCell), and the other cells hold no delimiter: any of the three may join them
    const line =
      `${csvCell(r[1], escape)}${d}${csvCell(r[2], escape)}${d}${csvCell(r[3], escape)}${d}${csvCell(r[4], escape)}${d}${csvCell(r[5], escape)}${d}` +
      `${csvCell(r[6], escape)}${d}${csvCell(r[7], escape)}${d}${csvCell(r[8], escape)}${d}${csvCell(r[9], escape)}${d}${csvCell(r[10], escape)}${d}` +
      `${csvCell(r[11], escape)}${d}${csvCell(r[12], escape)}${d}${r[13] === 1 ? 'true' : 'false'}${d}${isoZOrNull(r[14]) ?? ''}${d}${isoZOrNull(r[15]) ?? ''}${d}${isoZ(r[16])}\r\n`;
    if (at + line.length * 3 > buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, at + line.length * 3));
      buf.copy(bigger, 0, 0, at);
      buf = bigger;
    }
    at += buf.write(line, at, 'utf8');
  }
  return buf.subarray(0, at);
}

const IDEMPOTENCY_KEY = idempotencyKeyHeader("the caller's own, per ledger");
const JOB_ANSWERS = jobAnswers('import job', ImportJobAnswer);

/** `20261122-103200` (UTC) for download file names. */
const fileStamp = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace(/-/g, '').replace('T', '-').replace(/:/g, '');

/** The parts of a CSV upload (an import, a preview), as the OpenAPI document states them. */
const UPLOAD_FIELDS = {
  file: { description: 'The CSV: UTF-8 (a BOM is fine), comma, semicolon or tab separated, a header row first', file: 'text/csv', required: true },
  mapping: { description: 'JSON {field: column name | null}; name may be [first name column, last name column]; without it the columns are recognised by their names' },
};

function attachment(ctx: Koa.Context, fileName: string): void {
  ctx.type = 'text/csv; charset=utf-8';
  // server-chosen ASCII names; the RFC 8187 form too, for clients that prefer it (RFC 6266)
  ctx.set('Content-Disposition', `attachment; filename="${fileName}"; filename*=UTF-8''${encodeURIComponent(fileName)}`);
  ctx.set('Cache-Control', 'no-store');
}

/** The rejected rows as CSV: the original columns (CSV) or the contact fields (API), then the reason (and line, or the submitted JSON). */
function* rejectionCsv(imp: ImportJob, pages: Generator<Rejection[]>, escape: boolean, bom: boolean, delimiter: string): Generator<string> {
  const csv = imp.format;
  if (bom) yield '\uFEFF';
  if (imp.source === 'csv' && !csv) {
    yield csvHeader(REJECTION_COLUMNS, delimiter); // a file that could not be read: no row was taken
    return;
  }
  const kept = csv ? ownColumns(csv).length : 0;
  // rows an older version kept as read from a file of ours, escaping and all (CsvFormat.rawUnescaped)
  const stillEscaped = csv?.formulasEscaped === true && csv.rawUnescaped !== true;
  // API batches: `raw` is the submitted value as JSON, so what the contact fields cannot show
  // (unknown fields, wrong types, a row that is not an object) is not lost. The uploaded file's
  // own column names are its text (quoted and escaped); ours are plain names.
  yield csv ? csvLines([rejectedRowsHeader(csv)], escape, delimiter) : csvHeader(['row', ...CONTACT_FIELDS, 'reason', 'raw'], delimiter);
  for (const page of pages) {
    const rows = page.map((r) => {
      if (csv) {
        let cells: unknown[];
        if (Array.isArray(r.raw)) {
          const raw = stillEscaped ? (r.raw as unknown[]).map((c) => (typeof c === 'string' ? unescapeFormula(c) : c)) : (r.raw as unknown[]);
          // A row as wide as the header: its cells, a previous round's reason and line replaced by ours.
          // A row of another width comes back with its cells as read, neither padded nor cut, so that,
          // uploaded again without a fix, it is rejected again instead of read into the wrong columns;
          // in a file of ours every row's last two cells are that annotation (the scan checked the line).
          if (raw.length === csv.columns.length) cells = raw.slice(0, kept);
          else cells = csv.formulasEscaped && raw.length >= REJECTION_COLUMNS.length ? raw.slice(0, -REJECTION_COLUMNS.length) : raw;
        }
        else {
          // a duplicate recorded by an older version (it kept the row's cleaned-up values): put back in their columns
          cells = csv.columns.map(() => '');
          const draft = r.raw as Record<string, unknown>;
          for (const [field, i] of Object.entries(csv.mapping.fields)) cells[i] = draft[field] ?? '';
          cells = cells.slice(0, kept);
        }
        return [...cells, r.reason, r.line];
      }
      const raw = (typeof r.raw === 'object' && r.raw !== null && !Array.isArray(r.raw) ? r.raw : {}) as Record<string, unknown>;
      const cell = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));
      const email = raw.email ?? (raw.contactInfo as Record<string, unknown> | undefined)?.email;
      // a number stays a number cell (formula escaping would put a ' before -5 written as text), a big integer too
      const big = exactIntegerText(r.raw);
      const submitted = typeof r.raw === 'number' ? r.raw : big !== undefined ? BigInt(big) : JSON.stringify(r.raw);
      const scalar = typeof r.raw !== 'object' || r.raw === null || big !== undefined; // a big integer keeps its digits as JSON.rawJSON
      return [r.rowNo, ...CONTACT_FIELDS.map((f) => cell(f === 'email' ? email : raw[f])), scalar ? `${r.reason} (${r.raw === null ? 'null' : cell(r.raw)})` : r.reason, submitted];
    });
    yield csvLines(rows, escape, delimiter);
  }
}

/** Registers the ledger service (SPEC §4). Compatibility aliases come before `/contacts/:contactId`. */
export function registerLedgerRoutes(r: ApiRouter, svc: LedgerServices, opts: LedgerRouteOptions): void {
  const ledgerBase = (orgId: string, ledgerId: string) => ledgerUrl(opts.baseUrl, orgId, ledgerId);
  const showImport = (i: ImportJob) => presentImport(i, ledgerBase(i.orgId, i.ledgerId));
  /** 202 with a new import job; 200 with the job an earlier request with the same Idempotency-Key created. */
  const accepted = (ctx: Koa.Context, { job, replayed }: Created) => answerJob(ctx, replayed, `${ledgerBase(job.orgId, job.ledgerId)}/imports/${job.id}`, showImport(job));
  const L = '/orgs/:orgId/ledgers';
  const ONE = `${L}/:ledgerId`;

  // ── ledgers ─────────────────────────────────────────────────────────────
  r.add({ method: 'get', path: L, access: { org: 'viewer' }, query: pageQuery, summary: 'Ledgers of the organization', responses: { 200: { description: 'A page of ledgers', schema: LedgerPage } } }, (ctx, { params, query }) => {
    ctx.body = pageOf('ledgers', svc.ledgers.list(params.orgId!, query.limit ?? 100, query.cursor), presentLedger);
  });
  r.add({ method: 'post', path: L, access: { org: 'editor' }, body: S.NewLedger, summary: 'Create a ledger', responses: { 201: { description: 'The ledger (Location: its URL)', schema: LedgerAnswer } } }, (ctx, { caller, params, body }) => {
    const l = svc.ledgers.create(caller, params.orgId!, body);
    ctx.status = 201;
    ctx.set('Location', ledgerBase(l.orgId, l.id));
    ctx.body = presentLedger(l);
  });
  r.add({ method: 'get', path: ONE, access: { org: 'viewer' }, summary: 'A ledger', responses: { 200: { description: 'The ledger', schema: LedgerAnswer } } }, (ctx, { params }) => {
    ctx.body = presentLedger(svc.ledgers.get(params.orgId!, params.ledgerId!));
  });
  r.add({ method: 'patch', path: ONE, access: { org: 'editor' }, body: S.LedgerPatch, summary: 'Rename or describe a ledger', responses: { 200: { description: 'The ledger as updated', schema: LedgerAnswer } } }, (ctx, { caller, params, body }) => {
    ctx.body = presentLedger(svc.ledgers.update(caller, params.orgId!, params.ledgerId!, body));
  });
  r.add({ method: 'delete', path: ONE, access: { org: 'admin' }, summary: 'Delete a ledger with its contacts, imports and changes (purged in the background)', responses: { 204: { description: 'Deleted' } } }, (ctx, { caller, params }) => {
    svc.ledgers.remove(caller, params.orgId!, params.ledgerId!);
    ctx.status = 204;
  });

  // ── contacts ────────────────────────────────────────────────────────────
  r.add(
    {
      method: 'post',
      path: `${ONE}/contacts`,
      access: { org: 'editor' },
      body: S.ContactsBody,
      exactIntegers: true,
      bulk: true,
      summary: 'Add contacts: one contact or {contacts:[…]}; processed as an import job',
      description:
        'Answers 202 with the import job (Location header); the rows of {contacts:[…]} are validated by the job, bad rows are rejected with a reason; a single contact object that is invalid is answered 422 at once, without a job. ' +
        'With an Idempotency-Key header, a retry of the same request answers 200 with the job of the first one (Idempotent-Replayed: true); another request under the same key → 422.',
      tooLargeMessage: 'The request body is too large; upload large sets as a CSV file (POST …/imports).',
      headers: IDEMPOTENCY_KEY,
      responses: { ...JOB_ANSWERS, 413: { description: 'Too many contacts: use the CSV import' } },
    },
    (ctx, { caller, params, body, headers }) => {
      if ((ctx.request as { body?: unknown }).body === undefined) throw badRequest('malformed_body', 'The request body is empty; send one contact object or {"contacts": [ … ]}.');
      const batch = Object.keys(body).length === 1 && Array.isArray(body.contacts);
      if (!batch && 'contacts' in body)
        throw invalid('Send {"contacts": [ … ]} with an array and no other field, or one contact object.', [{ path: 'contacts', message: 'must be an array, alone in the body' }]);
      if (!batch) {
        const one = validateContact(body);
        if (!one.ok) throw invalid(`Invalid contact: ${one.reason}.`, one.problems.map((p) => ({ path: p.path || 'body', message: p.message })));
      }
      accepted(ctx, svc.imports.createApiImport(caller, params.orgId!, params.ledgerId!, batch ? (body.contacts as unknown[]) : [body], headers['Idempotency-Key'] as string | undefined));
    },
  );
  r.add({ method: 'get', path: `${ONE}/contacts`, access: { org: 'viewer' }, query: S.ContactListQuery, summary: 'Contacts, filtered and sorted (SPEC §4.2); view=count counts them', responses: { 200: { description: 'A page of contacts {contacts, nextCursor}, or with view=count {count}', schema: ContactListAnswer }, 503: SINCE_READ_503 } }, async (ctx, { params, query }) => {
    const { filter, sort } = S.filterOf(query);
    if (query.view === 'count') {
      const extra = (['cursor', 'limit', 'sortBy'] as const).filter((k) => query[k] !== undefined);
      if (extra.length) throw badRequest('invalid_parameter', `view=count does not take ${extra.join(', ')}.`, extra.map((k) => ({ path: k, message: 'is not used with view=count' })));
      ctx.body = { count: await svc.contacts.count(params.orgId!, params.ledgerId!, filter, clientGone(ctx)) };
      return;
    }
    ctx.body = pageOf('contacts', await svc.contacts.list(params.orgId!, params.ledgerId!, filter, sort, query.limit ?? 100, query.cursor, clientGone(ctx)), presentContact);
  });
  r.add({ method: 'get', path: `${ONE}/contacts/download`, access: { org: 'viewer' }, query: S.DownloadQuery, summary: 'Matching contacts as CSV (streamed)', responses: { 200: { description: 'text/csv', contentType: 'text/csv' }, 503: SINCE_READ_503 } }, async (ctx, { params, query }) => {
    const ledger = svc.contacts.requireLedger(params.orgId!, params.ledgerId!);
    const { filter, sort } = S.filterOf(query);
    const after = svc.contacts.downloadStart(ledger.id, filter, sort, query.cursor); // a bad cursor is a 400, said before the answer starts
    await svc.contacts.readyToDownload(filter); // before the answer starts: a 503 can still be said
    const escape = query.escapeFormulas ?? true;
    const delimiter = S.DOWNLOAD_DELIMITERS[query.delimiter ?? 'comma'];
    const pages = svc.contacts.pages(ledger.id, filter, sort, clientGone(ctx), { after, limit: query.limit });
    attachment(ctx, `ledger-${ledger.id}-${fileStamp(opts.now())}.csv`);
    ctx.body = Readable.from(
      (async function* () {
        yield `${query.bom ? '\uFEFF' : ''}${csvHeader(DOWNLOAD_HEADER, delimiter)}`;
        // A ledger deleted while its file streams: the answer is cut off (the connection closes
        // without the end of the chunked body), not ended as if the rows so far were all of them —
        // also when its purge already took the rest, so the last page came back empty.
        for await (const page of pages) {
          svc.contacts.requireLedger(params.orgId!, params.ledgerId!);
          yield downloadLines(page, escape, delimiter);
        }
        svc.contacts.requireLedger(params.orgId!, params.ledgerId!);
      })(),
      { objectMode: false },
    );
  });
  r.add({ method: 'post', path: `${ONE}/contacts/bulk_delete`, access: { org: 'editor' }, body: S.BulkDelete, summary: 'Delete contacts by id', responses: { 200: { description: 'How many of the contacts were deleted', schema: BulkDeleteAnswer }, 413: { description: `More than ${MAX_BULK_DELETE} contact ids: delete more in several calls` } } }, (ctx, { caller, params, body }) => {
    ctx.body = { countRowsDeleted: svc.contacts.bulkDelete(caller, params.orgId!, params.ledgerId!, body.contactIds) };
  });

  // ── imports (and their compatibility aliases under /contacts/imports) ──
  for (const base of [`${ONE}/imports`, `${ONE}/contacts/imports`]) {
    const alias = base.endsWith('/contacts/imports');
    const note = alias ? ' (compatibility alias)' : '';
    r.add(
      {
        method: 'post',
        path: base,
        access: { org: 'editor' },
        bulk: true,
        summary: `Upload a CSV file to import${note}`,
        description:
          'Answers 202 with the import job; a file whose text cannot be read as CSV (not UTF-8, a quote never closed, a header over 256 KiB…) gets a job that is failed from the start, its message naming the line, and nothing is imported. A row over 1 MiB is rejected alone, its cells not kept. ' +
          'An Idempotency-Key header makes a retry of the same file and mapping answer 200 with the first job.',
        rawBody: { contentTypes: ['multipart/form-data'], description: 'field "file": the CSV; optional field "mapping": JSON {field: column name | null}; name may be [first name column, last name column]', fields: UPLOAD_FIELDS },
        headers: IDEMPOTENCY_KEY,
        responses: { ...JOB_ANSWERS, 413: { description: 'Over the upload limit' }, 415: { description: 'Not a CSV file' }, 422: { description: 'Unusable file: empty, no header or no rows, no name/company column, a bad mapping' } },
      },
      async (ctx, { caller, params, headers, recheckAccess }) => {
        svc.ledgers.get(params.orgId!, params.ledgerId!); // no such ledger: 404 before the body is read (a tester's 121 MB were)
        const upload = await receiveUpload(ctx, { tmpRoot: opts.uploadTmpDir, maxBytes: opts.maxUploadBytes, fields: ['mapping'], space: opts.uploadSpace });
        try {
          await recheckAccess(); // the upload may have taken minutes
          accepted(ctx, await svc.imports.createCsvImport(caller, params.orgId!, params.ledgerId!, upload, upload.fields.mapping, headers['Idempotency-Key'] as string | undefined));
        } finally {
          upload.release();
        }
      },
    );
    r.add({ method: 'get', path: base, access: { org: 'viewer' }, query: pageQuery, summary: `Import jobs, newest first${note}`, responses: { 200: { description: 'A page of import jobs', schema: ImportJobPage } } }, (ctx, { params, query }) => {
      ctx.body = pageOf('imports', svc.imports.list(params.orgId!, params.ledgerId!, query.limit ?? 100, query.cursor), showImport);
    });
    // the alias takes the preview too: a client using /contacts/imports for uploads finds it where it looks
    r.add(
      {
        method: 'post',
        path: `${base}/preview`,
        access: { org: 'editor' },
        bulk: true,
        summary: `What a CSV upload would import (nothing is stored)${note}`,
        rawBody: { contentTypes: ['multipart/form-data'], description: 'field "file": the CSV; optional field "mapping"', fields: UPLOAD_FIELDS },
        responses: { 200: { description: 'The columns, the first rows and the mapping the import would use', schema: ImportPreviewAnswer } },
      },
      async (ctx, { params }) => {
        svc.ledgers.get(params.orgId!, params.ledgerId!); // as the upload's
        const upload = await receiveUpload(ctx, { tmpRoot: opts.uploadTmpDir, maxBytes: opts.maxUploadBytes, fields: ['mapping'], space: opts.uploadSpace });
        try {
          ctx.body = await svc.imports.preview(params.orgId!, params.ledgerId!, upload, upload.fields.mapping);
        } finally {
          upload.release();
        }
      },
    );
    r.add({ method: 'get', path: `${base}/:importId`, access: { org: 'viewer' }, summary: `An import job's status and counts${note}`, responses: { 200: { description: 'The import job', schema: ImportJobAnswer } } }, (ctx, { params }) => {
      ctx.body = showImport(svc.imports.get(params.orgId!, params.ledgerId!, params.importId!));
    });
    r.add({ method: 'get', path: `${base}/:importId/${alias ? 'downloadErrors' : 'errors'}`, access: { org: 'viewer' }, query: S.RejectedRowsQuery, summary: `Rejected rows as CSV with a reason column${note}`, description: 'Cells that a spreadsheet would read as a formula get a \' in front unless escapeFormulas=false; uploaded again, this file\'s cells lose that \' (its last two columns, reason and line, mark it).', responses: { 200: { description: 'text/csv', contentType: 'text/csv' } } }, (ctx, { params, query }) => {
      const imp = svc.imports.get(params.orgId!, params.ledgerId!, params.importId!);
      attachment(ctx, `import-${imp.id}-errors.csv`);
      // By default the upload's own delimiter (`,` `;` or a tab): fixed and uploaded again the file
      // reads as the upload did, and a spreadsheet that opened the upload opens it alike (a `;`
      // file's errors came back comma-separated, one column in a `;` Excel: a tester's case).
      const own = imp.format && Object.values(S.DOWNLOAD_DELIMITERS).find((d) => d === imp.format!.delimiter);
      const delimiter = query.delimiter ? S.DOWNLOAD_DELIMITERS[query.delimiter] : (own ?? ',');
      ctx.body = Readable.from(rejectionCsv(imp, svc.imports.rejections(imp.id), query.escapeFormulas ?? true, query.bom ?? false, delimiter), { objectMode: false });
    });
    // the refused rows hold whatever the file said about people (an erasure request: docs/operations.md)
    if (!alias) {
      r.add({ method: 'delete', path: `${base}/:importId/errors`, access: { org: 'editor' }, summary: "Delete an ended import's rejected rows (its counts stay)", responses: { 204: { description: 'Deleted' }, 409: { description: 'The import is still running' } } }, async (ctx, { caller, params }) => {
        await svc.imports.deleteRejections(caller, params.orgId!, params.ledgerId!, params.importId!);
        ctx.status = 204;
      });
    }
  }

  r.add({ method: 'get', path: `${ONE}/contacts/:contactId`, access: { org: 'viewer' }, summary: 'A contact', responses: { 200: { description: 'The contact', schema: ContactAnswer } } }, (ctx, { params }) => {
    ctx.body = presentContact(svc.contacts.get(params.orgId!, params.ledgerId!, params.contactId!));
  });
  r.add({ method: 'delete', path: `${ONE}/contacts/:contactId`, access: { org: 'editor' }, summary: 'Delete a contact', responses: { 204: { description: 'Deleted' } } }, (ctx, { caller, params }) => {
    svc.contacts.remove(caller, params.orgId!, params.ledgerId!, params.contactId!);
    ctx.status = 204;
  });
}
