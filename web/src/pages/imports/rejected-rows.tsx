import { download, fetchText, LEDGER, parseCsv } from '../../api.ts';
import { Async, Dialog, fmtCount, FormError, refocusWhenDone, useAction, useRequest } from '../../ui.tsx';
import { colName } from './column-names.ts';
import type { ImportJob } from './import-job.tsx';

/** The rejected rows with their reasons, in the page, and as a CSV download. */
export function Rejected(props: { job: ImportJob; orgId: string; ledgerId: string; onClose: () => void }) {
  const path = `${LEDGER}/orgs/${props.orgId}/ledgers/${props.ledgerId}/imports/${props.job.id}/errors`;
  // the reason and line first: they are what a person reads; the original columns follow
  const req = useRequest(async (signal) => {
    const rows = parseCsv(await fetchText(`${path}?delimiter=comma&escapeFormulas=false`, signal)); // shown as text, never evaluated
    const head = rows[0] ?? [];
    const first = ['line', 'reason', 'row'].map((h) => head.lastIndexOf(h)).filter((i) => i >= 0);
    const order = [...first, ...head.map((_, i) => i).filter((i) => !first.includes(i))];
    // a column of the file with a blank header is named by its place, as the wizard names it ("(column 7)"), not left an empty <th>
    return [order.map((i) => colName(head, i)), ...rows.slice(1).map((r) => order.map((i) => r[i] ?? ''))];
  }, [path]);
  // with a BOM, as the contacts download: this file is opened in a spreadsheet to be fixed, and Excel
  // reads a CSV without one in the machine's legacy code page (its delimiter is the upload's own)
  const dl = useAction(() => download(path, { bom: 'true' }));
  const LIMIT = 500;
  return (
    <Dialog title={`Rejected rows of ${props.job.fileName ?? 'the import'}`} onClose={props.onClose} wide>
      <Async req={req} label="Loading the rejected rows…" empty={(rows) => rows.length < 2} emptyText="No rejected rows.">
        {(rows) => (
          <>
            <p class="muted">
              {fmtCount(rows.length - 1, 'row was', 'rows were')} not imported; the <em>reason</em> column says why. Fix {rows.length === 2 ? 'it' : 'them'} in the file and import it again.
            </p>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="Rejected rows">
              <table class="rejected">
                <thead>
                  <tr>
                    {rows[0]!.map((h, i) => (
                      <th scope="col" key={i}>
                        {h}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {rows.slice(1, LIMIT + 1).map((r, i) => (
                    <tr key={i}>
                      {r.map((c, k) => (
                        <td key={k} class={rows[0]![k] === 'reason' ? 'reason' : ''}>
                          {c}
                        </td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {rows.length - 1 > LIMIT && <p class="muted">The first {LIMIT} are shown; the download has them all.</p>}
          </>
        )}
      </Async>
      <FormError error={dl.error} />
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onClose}>
          Close
        </button>
        <button
          type="button"
          disabled={dl.busy}
          onClick={(e) => {
            refocusWhenDone(e.currentTarget);
            void dl.run();
          }}
        >
          Download rejected rows (CSV)
        </button>
      </div>
    </Dialog>
  );
}
