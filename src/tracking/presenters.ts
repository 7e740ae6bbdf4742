import { isoZ, isoZOrNull } from '../clock.ts';
import type { FeedJob } from './feeds-repo.ts';
import type { Change } from './model.ts';

export const presentChange = (c: Change) => ({
  id: c.id,
  contactId: c.contactId,
  ledgerId: c.ledgerId,
  type: c.type,
  ...(c.field ? { field: c.field } : {}),
  from: c.from,
  to: c.to,
  detectedAt: isoZ(c.detectedAt),
  observedAt: isoZOrNull(c.observedAt),
});

export const presentFeed = (f: FeedJob, base: string) => ({
  id: f.id,
  source: f.source,
  fileName: f.fileName,
  format: f.format,
  gzip: f.gzip,
  status: f.status,
  received: f.received,
  invalid: f.invalid,
  stale: f.stale,
  repeated: f.repeated,
  personsUpdated: f.personsUpdated,
  contactsMatched: f.contactsMatched,
  jobChanges: f.jobChanges,
  infoChanges: f.infoChanges,
  createdBy: f.createdBy,
  createdAt: isoZ(f.createdAt),
  startedAt: isoZOrNull(f.startedAt),
  finishedAt: isoZOrNull(f.finishedAt),
  message: f.message,
  errorsUrl: f.invalid > 0 ? `${base}/feed/${f.id}/errors` : null,
});
