import { isoZ, isoZOrNull } from '../clock.ts';
import { mappingByName } from '../csv/columns.ts';
import type { Contact, ImportJob, Ledger } from './model.ts';

/** Wire shapes of the ledger service (SPEC §4). */

/** Where the ledger API lives, under the service's base URL. */
export const LEDGER_PREFIX = '/api/ledger/v1';

/** The URL of a ledger (the base of its contacts', imports' and changes' URLs). */
export const ledgerUrl = (baseUrl: string, orgId: string, ledgerId: string): string => `${baseUrl}${LEDGER_PREFIX}/orgs/${orgId}/ledgers/${ledgerId}`;

export const presentLedger = (l: Ledger) => ({
  id: l.id,
  orgId: l.orgId,
  name: l.name,
  description: l.description || null, // none is null, as a contact's absent fields (SPEC §4.1)
  contactCount: l.contactCount,
  createdAt: isoZ(l.createdAt),
  updatedAt: isoZ(l.updatedAt),
});

export const presentContact = (c: Contact) => ({
  id: c.id,
  ledgerId: c.ledgerId,
  importId: c.importId,
  referenceId: c.referenceId,
  name: c.name,
  company: c.company,
  importCompany: c.importCompany,
  importTitle: c.importTitle,
  title: c.title,
  titleLevel: c.titleLevel,
  titleDomain: c.titleDomain,
  location: c.location,
  contactInfo: { email: c.email, emailStatus: c.emailStatus },
  hasMultipleJobs: c.hasMultipleJobs,
  linkedin: c.linkedin,
  isVerified: c.isVerified,
  jobStartedAt: isoZOrNull(c.jobStartedAt),
  lastJobChangedAt: isoZOrNull(c.lastJobChangedAt),
  lastInfoChangedAt: isoZOrNull(c.lastInfoChangedAt),
  createdAt: isoZ(c.createdAt),
  updatedAt: isoZ(c.updatedAt),
});

/** An import job; `base` is the ledger's URL path, for `errorsUrl`. */
export const presentImport = (i: ImportJob, base: string) => ({
  id: i.id,
  ledgerId: i.ledgerId,
  source: i.source,
  fileName: i.fileName,
  status: i.status,
  submitted: i.submitted,
  imported: i.imported,
  duplicates: i.duplicates,
  invalid: i.invalid,
  matched: i.matched,
  jobChanges: i.jobChanges,
  processed: i.imported + i.duplicates + i.invalid,
  createdBy: i.createdBy,
  createdAt: isoZ(i.createdAt),
  startedAt: isoZOrNull(i.startedAt),
  finishedAt: isoZOrNull(i.finishedAt),
  message: i.message,
  errorsUrl: i.duplicates + i.invalid > 0 ? `${base}/imports/${i.id}/errors` : null,
  ...(i.format ? { columns: i.format.columns, mapping: mappingByName(i.format.columns, i.format.mapping) } : {}),
});
