import { Time } from './ui.tsx';

/**
 * One change of a contact as the API gives it (SPEC §5), and how the web application shows it:
 * on a contact's page (its history) and on a ledger's Changes tab alike.
 */
export interface Change {
  id: string;
  contactId: string;
  type: 'job' | 'info';
  field?: string;
  from: Record<string, unknown> | null;
  to: Record<string, unknown> | null;
  detectedAt: string;
  observedAt: string | null;
}

/** A page of changes (a contact's history, a ledger's change feed). */
export interface ChangePage {
  changes: Change[];
  nextCursor: string | null;
}

/** The information fields of a change, in words (the API's names are its fields': "emailStatus changed" read as code, a tester's case). */
const FIELD_WORDS: Record<string, string> = { title: 'title', location: 'location', email: 'e-mail', emailStatus: 'e-mail status', hasMultipleJobs: 'several jobs', jobStartedAt: 'job start' };

/** The changed field's value in a change's from/to object; null (shown as —) is a value too. The whole object only when it does not hold the field. */
const valueOf = (side: Record<string, unknown> | null | undefined, field: string | null | undefined) =>
  side && field && Object.prototype.hasOwnProperty.call(side, field) ? side[field] : side;

/** A value as shown: — for none. */
export const show = (v: unknown) => (v === null || v === undefined || v === '' ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/**
 * A value of the contact's, isolated from the text around it (<bdi>): a right-to-left title or
 * company in "X at Y → Z at W" otherwise took the words around it into its own direction, and the
 * old and new companies read swapped (a web tester's Arabic contact).
 */
export const Value = (props: { v: unknown }) => <bdi>{show(props.v)}</bdi>;

/** When a change was detected, and its kind in words ("job change", "title changed"). */
export function ChangeWhen(props: { change: Change }) {
  const c = props.change;
  return (
    <p class="when">
      <Time iso={c.detectedAt} />
      <span class={`badge ${c.type === 'job' ? 'job' : ''}`}>{c.type === 'job' ? 'job change' : `${FIELD_WORDS[c.field ?? ''] ?? c.field ?? 'info'} changed`}</span>
    </p>
  );
}

/** What changed: "title at company → title at company", or the field's old → new value. */
export function ChangeWhat(props: { change: Change }) {
  const c = props.change;
  return c.type === 'job' ? (
    <p>
      <Value v={c.from?.title} /> at <strong><Value v={c.from?.company} /></strong> → <Value v={c.to?.title} /> at <strong><Value v={c.to?.company} /></strong>
    </p>
  ) : (
    <p>
      <Value v={valueOf(c.from, c.field)} /> → <strong><Value v={valueOf(c.to, c.field)} /></strong>
    </p>
  );
}
