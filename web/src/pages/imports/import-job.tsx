// An import job as the API gives it (SPEC §4.4), and its progress bar: the wizard's last step and
// Import history's running rows show it.
import { fmtCount, fmtDateTime, fmtNumber } from '../../ui.tsx';

export interface ImportJob {
  id: string;
  ledgerId: string;
  source: 'api' | 'csv';
  fileName: string | null;
  status: 'pending' | 'processing' | 'completed' | 'failed';
  submitted: number;
  imported: number;
  duplicates: number;
  invalid: number;
  matched: number;
  jobChanges: number;
  processed: number;
  createdBy: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  message: string | null;
  errorsUrl: string | null;
}

export const done = (s: ImportJob['status']) => s === 'completed' || s === 'failed';

/** An import as a button or link names it beside its row's others: its file (or "by API") and when it started. */
export const importName = (i: ImportJob) => `${i.source === 'csv' ? (i.fileName ?? 'upload') : 'by API'}, ${fmtDateTime(i.createdAt)}`;

export function JobProgress(props: { job: ImportJob; compact?: boolean }) {
  const j = props.job;
  const total = Math.max(j.submitted, j.processed, 1);
  const pct = Math.round((j.processed / total) * 100);
  return (
    <div class={`progress${props.compact ? ' compact' : ''}`}>
      <progress max={total} value={j.processed} aria-label={`Import ${j.fileName ?? j.id}`} aria-valuetext={`${j.processed} of ${j.submitted} rows`} />
      <p class="progress-text" aria-live={props.compact ? undefined : 'polite'}>
        <strong>{fmtNumber(j.processed)}</strong> of {fmtCount(j.submitted, 'row')} ({pct}%) · {j.status}
      </p>
    </div>
  );
}
