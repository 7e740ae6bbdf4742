import { useState } from 'preact/hooks';
import { LEDGER } from '../../api.ts';
import { Async, CursorPager, fmtNumber, JobStatus, Link, Time } from '../../ui.tsx';
import { LedgerHead, useRetryWithHead } from '../ledger-head.tsx';
import { done, importName, JobProgress, type ImportJob } from './import-job.tsx';
import { useLiveImports } from './live-imports.ts';
import { Rejected } from './rejected-rows.tsx';

/** Import jobs of the ledger, newest first; running ones update live. */
export function ImportHistory(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`;
  const [cursors, setCursors] = useState<string[]>([]);
  // a ledger deleted while its history is open answers 404: no more polling, and the heading is
  // read again, which then says the ledger does not exist
  const { req, gone } = useLiveImports(base, { limit: 50, cursor: cursors.at(-1) });
  const [open, setOpen] = useState<ImportJob>();
  // "Try again" asks again for the heading too
  const { again, retry } = useRetryWithHead(req.reload);
  return (
    <>
      <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="imports" refresh={[gone, again]}>
        {/* the page's own heading under the ledger's (the tab above says it to the eye; headings navigation found none) */}
        <h2 class="visually-hidden">Import history</h2>
        <Async req={req} retry={retry} label="Loading imports…" empty={(d) => d.imports.length === 0} emptyText={<p>Nothing was imported into this ledger yet.</p>}>
          {(d) => (
            <>
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Imports">
                <table class="imports">
                  <thead>
                    <tr>
                      <th scope="col">Started</th>
                      <th scope="col">Source</th>
                      <th scope="col">Status</th>
                      <th scope="col" class="num">Rows</th>
                      <th scope="col" class="num">Imported</th>
                      <th scope="col" class="num">Rejected</th>
                      <th scope="col" class="num">Job changes</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.imports.map((i) => (
                      <tr key={i.id} class={i.status === 'failed' ? 'failed' : undefined}>
                        <th scope="row" class="plain">
                          <Time iso={i.createdAt} />
                        </th>
                        <td class="break">{i.source === 'csv' ? i.fileName : 'API'}</td>
                        <td class="status">
                          {done(i.status) ? <JobStatus status={i.status} message={i.message} /> : <JobProgress job={i} compact />}
                        </td>
                        <td class="num">{fmtNumber(i.submitted)}</td>
                        <td class="num">{fmtNumber(i.imported)}</td>
                        <td class="num">{fmtNumber(i.invalid + i.duplicates)}</td>
                        <td class="num">{fmtNumber(i.jobChanges)}</td>
                        <td class="cell-actions">
                          {i.imported > 0 && (
                            <Link href={`/orgs/${orgId}/ledgers/${ledgerId}?importId=${i.id}`} class="small" aria-label={`Contacts of the import ${importName(i)}`}>
                              Contacts
                            </Link>
                          )}
                          {i.invalid + i.duplicates > 0 && (
                            <button type="button" class="link small" aria-label={`Rejected rows of the import ${importName(i)}`} onClick={() => setOpen(i)}>
                              Rejected rows
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <CursorPager cursors={cursors} setCursors={setCursors} nextCursor={d.nextCursor} />
            </>
          )}
        </Async>
        {open && <Rejected job={open} orgId={orgId} ledgerId={ledgerId} onClose={() => setOpen(undefined)} />}
      </LedgerHead>
    </>
  );
}
