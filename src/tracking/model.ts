/** Change tracking records (SPEC §5); timestamps in epoch ms. */

/** One observation of a person from the data feed, validated. */
export interface FeedRecord {
  personId?: string;
  linkedin?: string; // canonical URL
  email?: string;
  emailStatus?: 'valid' | 'catch-all' | 'best-guess';
  name: string;
  company: string;
  title?: string;
  location?: string;
  jobStartedAt?: number;
  hasMultipleJobs?: boolean;
  /** Rounded up to a whole millisecond; `observedNsBefore`: how far before it the time is (clock.ts ExactTime). */
  observedAt?: number;
  observedNsBefore?: number | null;
}

export interface Person {
  seq: number;
  /** The seq as text: what contacts.person_id holds. */
  id: string;
  externalId: string | null;
  linkedinSlug: string | null;
  email: string | null;
  emailStatus: string | null;
  name: string;
  nameKey: string;
  company: string;
  companyKey: string;
  title: string | null;
  location: string | null;
  jobStartedAt: number | null;
  hasMultipleJobs: boolean | null;
  /** Rounded up to a whole millisecond; `observedNsBefore`: how far before it the time is, null when not known (clock.ts ExactTime). */
  observedAt: number;
  observedNsBefore: number | null;
  updatedAt: number;
  /**
   * Digests of the feed records seen at `observedAt` (8 bytes each, the latest RECORDS_SEEN_MAX):
   * one of them coming again in a later feed is a replay, not a same-time correction (tracker.ts).
   */
  seenRecords: Buffer | null;
}

export type ChangeType = 'job' | 'info';

/** The fields an information change is about (one change per field; a new company is a job change). */
export const INFO_FIELDS = ['title', 'location', 'email', 'emailStatus', 'hasMultipleJobs', 'jobStartedAt'] as const;

export interface Change {
  seq: number;
  id: string;
  ledgerId: string;
  contactId: string;
  type: ChangeType;
  field: string | null;
  from: Record<string, unknown>;
  to: Record<string, unknown>;
  detectedAt: number;
  observedAt: number | null;
}

/** What applying feed records or matching imported contacts added up to. */
export interface TrackingCounts {
  personsUpdated: number;
  contactsMatched: number;
  jobChanges: number;
  infoChanges: number;
  stale: number;
  /** Records about a person the same feed listed before, at the same observation time: not applied (FeedListing). */
  repeated: number;
}

export const zeroCounts = (): TrackingCounts => ({ personsUpdated: 0, contactsMatched: 0, jobChanges: 0, infoChanges: 0, stale: 0, repeated: 0 });
