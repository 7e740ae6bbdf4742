import { useState } from 'preact/hooks';
import { fmtCount, fmtNumber, Link } from '../../ui.tsx';
import type { ImportJob } from './import-job.tsx';
import { Rejected } from './rejected-rows.tsx';

/** The counts of an import that has ended, with its contacts and its rejected rows. */
export function JobResult(props: { job: ImportJob; orgId: string; ledgerId: string }) {
  const j = props.job;
  const [open, setOpen] = useState(false);
  const rejected = j.duplicates + j.invalid;
  return (
    <>
      {j.status === 'failed' && <p class="form-error" role="alert">{j.message ?? 'The file could not be read.'}</p>}
      <dl class="counts">
        <div>
          <dt>Imported</dt>
          <dd>{fmtNumber(j.imported)}</dd>
        </div>
        <div>
          <dt>Invalid</dt>
          <dd>{fmtNumber(j.invalid)}</dd>
        </div>
        <div>
          <dt>Duplicates</dt>
          <dd>{fmtNumber(j.duplicates)}</dd>
        </div>
        <div>
          <dt>Matched to people</dt>
          <dd>{fmtNumber(j.matched)}</dd>
        </div>
        <div>
          <dt>Job changes found</dt>
          <dd>{fmtNumber(j.jobChanges)}</dd>
        </div>
      </dl>
      <div class="actions left">
        {j.imported > 0 && (
          <Link class="button" href={`/orgs/${props.orgId}/ledgers/${props.ledgerId}?importId=${j.id}`}>
            View the imported contacts
          </Link>
        )}
        {rejected > 0 && (
          <button type="button" class="secondary" onClick={() => setOpen(true)}>
            Open the {fmtCount(rejected, 'rejected row')}
          </button>
        )}
      </div>
      {open && <Rejected job={j} orgId={props.orgId} ledgerId={props.ledgerId} onClose={() => setOpen(false)} />}
    </>
  );
}
