import type { ColumnMapping } from '../csv/columns.ts';
import type { Caller } from '../identity/model.ts';
import type { JobStatus } from '../jobs/queue.ts';

/** Ledger-service records as the services see them (timestamps in epoch ms). */

export interface Ledger {
  id: string;
  orgId: string;
  name: string;
  description: string;
  contactCount: number;
  createdAt: number;
  updatedAt: number;
}

export interface Contact {
  seq: number;
  id: string;
  ledgerId: string;
  importId: string | null;
  referenceId: string | null;
  name: string;
  company: string;
  importCompany: string;
  importTitle: string | null;
  title: string | null;
  titleLevel: string | null;
  titleDomain: string | null;
  location: string | null;
  email: string | null;
  emailStatus: string | null;
  linkedin: string | null;
  hasMultipleJobs: boolean | null;
  isVerified: boolean;
  jobStartedAt: number | null;
  lastJobChangedAt: number | null;
  lastInfoChangedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export const IMPORT_SOURCES = ['api', 'csv'] as const;
export type ImportSource = (typeof IMPORT_SOURCES)[number];

/** How a CSV upload is read: decided at upload time, kept with the job so a resume reads it alike. */
export interface CsvFormat {
  delimiter: string;
  /** Byte offset of the first data row (after BOM and header). */
  dataStart: number;
  /** Line number of the header row's last line (data starts on the next line). */
  headerLines: number;
  columns: string[];
  mapping: ColumnMapping;
  /** A rejected-rows CSV of ours uploaded again: the reader takes off the `'` formula escaping put in front of cells. */
  formulasEscaped?: boolean;
  /** A download of ours uploaded again (its header is DOWNLOAD_HEADER): its cells lose their escaping too. */
  download?: boolean;
  /**
   * The header ends in unnamed columns that hold data in most of the rows the upload's scan read first:
   * real columns without a name (nobody imports them), not trailing separators — a row may have
   * text in them (src/csv/read-rows.ts fitToHeader's `named`).
   */
  unnamedColumns?: boolean;
  /**
   * A file of ours whose rejected rows are stored without our escaping (since the eighteenth
   * session). Without it, a rejected-rows CSV of ours kept its rows escaped as read: they lose
   * that escaping when written out, which escapes them once again.
   */
  rawUnescaped?: boolean;
}

/** The download's fixed header (SPEC §4.3). */
export const DOWNLOAD_HEADER = [
  'id', 'referenceId', 'name', 'linkedin', 'importCompany', 'importTitle', 'company', 'title', 'titleLevel', 'titleDomain',
  'email', 'location', 'isVerified', 'lastJobChangedAt', 'lastInfoChangedAt', 'createdAt',
] as const;

export const CONTACT_FIELDS = ['name', 'company', 'title', 'location', 'email', 'linkedin', 'referenceId'] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

export interface ImportJob extends ImportProgress {
  id: string;
  ledgerId: string;
  orgId: string;
  source: ImportSource;
  fileName: string | null;
  filePath: string | null;
  format: CsvFormat | null;
  status: JobStatus;
  cursorRows: number;
  cursorBytes: number;
  cursorLines: number;
  message: string | null;
  createdBy: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/**
 * What another module keeps per ledger and per contact (change tracking: change history, daily
 * change-set files). The ledger service removes it together with the ledger or the contact.
 */
export interface LedgerDataOwner {
  /** Deletes up to n of the ledger's rows, inside a purge chunk's transaction; returns how many went (0: none left). */
  purgeRows(ledgerId: string, n: number): number;
  /** Removes the ledger's files, once its rows are gone. */
  removeFiles(ledgerId: string): void;
  /** Deletes what is kept about one contact, inside the transaction that deletes the contact. */
  forgetContact(contactId: string): void;
}

/**
 * What another module keeps that names ledgers (a webhook's ledgerIds): told inside the
 * transaction that deletes a ledger, so that nothing goes on naming a ledger that is gone.
 */
export interface LedgerReferrer {
  forgetLedger(by: Caller, orgId: string, ledgerId: string): void;
}

/**
 * What another module keeps per organization besides its ledgers (audit log, webhook deliveries):
 * deleted in chunks by the organization's purge before its row, whose cascade would otherwise
 * take all of it in one transaction.
 */
export interface OrgDataOwner {
  /** Deletes up to n of the organization's rows, inside a purge chunk's transaction; returns how many went (0: none left). */
  purgeOrgRows(orgId: string, n: number): number;
}

/** Row counts an import chunk adds. */
export interface ImportProgress {
  submitted: number;
  imported: number;
  duplicates: number;
  invalid: number;
  matched: number;
  jobChanges: number;
}

export interface Rejection {
  rowNo: number;
  line: number | null;
  reason: string;
  kind: 'invalid' | 'duplicate';
  /** The row as submitted: a JSON object (API) or the CSV cells. */
  raw: unknown;
}
