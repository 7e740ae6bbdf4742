import { useEffect, useRef, useState } from 'preact/hooks';
import { api, download, fetchText, LEDGER, parseCsv } from '../api.ts';
import { Async, CursorPager, atLeast, Dialog, Empty, ErrorBox, fmtNumber, FormError, Link, Loading, Time, useAction, useRequest, useRole, asApiError } from '../ui.tsx';
import { LedgerHead } from './ledger-head.tsx';

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

interface Preview {
  columns: string[];
  delimiter: string;
  rowCount: number;
  rows: string[][];
  suggestedMapping: Record<string, string | string[]>;
  mapping: Record<string, string | string[]>;
  missing: string[];
}

const FIELDS: { field: string; label: string; required?: boolean }[] = [
  { field: 'name', label: 'Name', required: true },
  { field: 'company', label: 'Company', required: true },
  { field: 'title', label: 'Title' },
  { field: 'email', label: 'E-mail' },
  { field: 'linkedin', label: 'LinkedIn URL' },
  { field: 'location', label: 'Location' },
  { field: 'referenceId', label: 'Reference id (your CRM id)' },
];
const SPLIT = '\u0000first+last';
const NONE = '';
const DELIMITERS: Record<string, string> = { ',': 'comma', ';': 'semicolon', '\t': 'tab' };
const done = (s: ImportJob['status']) => s === 'completed' || s === 'failed';

/** Choose a file → preview and mapping → start → live progress → result. */
export function ImportWizard(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const role = useRole(orgId);
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`;
  const [file, setFile] = useState<File>();
  const [preview, setPreview] = useState<Preview>();
  const [choice, setChoice] = useState<Record<string, string>>({});
  const [job, setJob] = useState<ImportJob>();
  const inputRef = useRef<HTMLInputElement>(null);

  const previewAct = useAction(async (f: File) => {
    const form = new FormData();
    form.append('file', f);
    const p = await api<Preview>('POST', `${base}/preview`, { form });
    const c: Record<string, string> = {};
    for (const { field } of FIELDS) {
      const m = p.suggestedMapping[field];
      c[field] = Array.isArray(m) ? SPLIT : (m ?? NONE);
    }
    setChoice(c);
    setPreview(p);
  });
  const startAct = useAction(async () => {
    const mapping: Record<string, string | null> = {};
    for (const { field } of FIELDS) {
      const v = choice[field] ?? NONE;
      if (v === SPLIT) continue; // keep the suggested first name + last name
      mapping[field] = v === NONE ? null : v;
    }
    const form = new FormData();
    form.append('mapping', JSON.stringify(mapping));
    form.append('file', file!);
    setJob(await api<ImportJob>('POST', base, { form }));
  });

  // live progress: poll the job until it is done
  useEffect(() => {
    if (!job || done(job.status)) return;
    let stop = false;
    const t = setTimeout(async () => {
      try {
        const j = await api<ImportJob>('GET', `${base}/${job.id}`);
        if (!stop) setJob(j);
      } catch (e) {
        if (!stop) startAct.setError(asApiError(e));
      }
    }, 400);
    return () => {
      stop = true;
      clearTimeout(t);
    };
  }, [job]);

  const reset = () => {
    setFile(undefined);
    setPreview(undefined);
    setJob(undefined);
    previewAct.setError(undefined);
    startAct.setError(undefined);
  };

  if (!atLeast(role, 'editor'))
    return (
      <>
        <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="import" />
        <Empty>Importing needs the editor role.</Empty>
      </>
    );

  const step = job ? 3 : preview ? 2 : 1;
  const missing = FIELDS.filter((f) => f.required && !(choice[f.field] ?? NONE));
  const shown = (i: number) => (i === 1 ? 'Choose a file' : i === 2 ? 'Check the columns' : 'Import');

  return (
    <>
      <LedgerHead key={job?.status} orgId={orgId} ledgerId={ledgerId} tab="import" />
      <ol class="steps" aria-label="Import steps">
        {[1, 2, 3].map((i) => (
          <li key={i} class={i === step ? 'current' : i < step ? 'done' : ''} aria-current={i === step ? 'step' : undefined}>
            <span class="num">{i}</span> {shown(i)}
          </li>
        ))}
      </ol>

      {step === 1 && (
        <section class="card" aria-labelledby="choose-title">
          <h2 id="choose-title">Choose a CSV file</h2>
          <p class="muted">
            A header row is needed. Columns such as <em>name</em> (or <em>first name</em> + <em>last name</em>), <em>company</em>, <em>title</em>, <em>email</em>, <em>linkedin</em> and <em>reference id</em> are recognised; you can change the mapping next. Comma, semicolon or tab separated; UTF-8.
          </p>
          <div class="field">
            <label for="csv-file">CSV file</label>
            <input
              id="csv-file"
              ref={inputRef}
              type="file"
              accept=".csv,.tsv,.txt,text/csv"
              onChange={(e) => {
                const f = e.currentTarget.files?.[0];
                if (!f) return;
                setFile(f);
                void previewAct.run(f);
              }}
            />
          </div>
          {previewAct.busy && <Loading label={`Reading ${file?.name ?? 'the file'}…`} />}
          {previewAct.error && <ErrorBox error={previewAct.error} title="This file cannot be imported." />}
        </section>
      )}

      {step === 2 && preview && file && (
        <section class="card" aria-labelledby="map-title">
          <h2 id="map-title">Check the columns</h2>
          <p class="muted">
            <strong>{file.name}</strong>: {fmtNumber(preview.rowCount)} rows, {DELIMITERS[preview.delimiter] ?? preview.delimiter} separated, {preview.columns.length} columns. Each contact field below takes its value from the column you choose.
          </p>
          <div class="mapping">
            {FIELDS.map(({ field, label, required }) => (
              <div class="field" key={field}>
                <label for={`map-${field}`}>
                  {label}
                  {required && <span class="req"> (required)</span>}
                </label>
                <select id={`map-${field}`} value={choice[field] ?? NONE} onChange={(e) => setChoice({ ...choice, [field]: e.currentTarget.value })}>
                  <option value={NONE}>— not imported —</option>
                  {field === 'name' && Array.isArray(preview.suggestedMapping.name) && <option value={SPLIT}>{preview.suggestedMapping.name.join(' + ')}</option>}
                  {preview.columns.map((c) => (
                    <option key={c} value={c}>
                      {c}
                    </option>
                  ))}
                </select>
              </div>
            ))}
          </div>
          {missing.length > 0 && (
            <p class="form-error" role="alert">
              Choose a column for {missing.map((m) => m.label).join(' and ')}: every contact needs them.
            </p>
          )}
          <h3>First rows of the file</h3>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="First rows of the file">
            <table class="preview">
              <thead>
                <tr>
                  {preview.columns.map((c) => (
                    <th scope="col" key={c}>
                      {c}
                      <span class="maps">{FIELDS.filter((f) => choice[f.field] === c || (choice[f.field] === SPLIT && Array.isArray(preview.suggestedMapping.name) && preview.suggestedMapping.name.includes(c))).map((f) => `→ ${f.label}`).join(', ')}</span>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {preview.rows.map((r, i) => (
                  <tr key={i}>
                    {preview.columns.map((_, j) => (
                      <td key={j}>{r[j] ?? ''}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <FormError error={startAct.error} />
          <div class="actions">
            <button type="button" class="secondary" onClick={reset}>
              Choose another file
            </button>
            <button type="button" disabled={missing.length > 0 || startAct.busy} onClick={() => void startAct.run()}>
              {startAct.busy ? 'Uploading…' : `Import ${fmtNumber(preview.rowCount)} rows`}
            </button>
          </div>
        </section>
      )}

      {step === 3 && job && (
        <section class="card" aria-labelledby="run-title">
          <h2 id="run-title">{job.status === 'completed' ? 'Import finished' : job.status === 'failed' ? 'Import failed' : 'Importing…'}</h2>
          <JobProgress job={job} />
          {startAct.error && <ErrorBox error={startAct.error} title="Lost track of the import; it goes on in the background." />}
          {done(job.status) && <JobResult job={job} orgId={orgId} ledgerId={ledgerId} />}
          <div class="actions">
            {done(job.status) && (
              <button type="button" class="secondary" onClick={reset}>
                Import another file
              </button>
            )}
            <Link class="button secondary" href={`/orgs/${orgId}/ledgers/${ledgerId}/imports`}>
              Import history
            </Link>
          </div>
        </section>
      )}
    </>
  );
}

export function JobProgress(props: { job: ImportJob; compact?: boolean }) {
  const j = props.job;
  const total = Math.max(j.submitted, j.processed, 1);
  const pct = Math.round((j.processed / total) * 100);
  return (
    <div class={`progress${props.compact ? ' compact' : ''}`}>
      <progress max={total} value={j.processed} aria-label={`Import ${j.fileName ?? j.id}`} aria-valuetext={`${j.processed} of ${j.submitted} rows`} />
      <p class="progress-text" aria-live={props.compact ? undefined : 'polite'}>
        <strong>{fmtNumber(j.processed)}</strong> of {fmtNumber(j.submitted)} rows ({pct}%) · {j.status}
      </p>
    </div>
  );
}

function JobResult(props: { job: ImportJob; orgId: string; ledgerId: string }) {
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
          <dt>Rejected</dt>
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
            Open the {fmtNumber(rejected)} rejected rows
          </button>
        )}
      </div>
      {open && <Rejected job={j} orgId={props.orgId} ledgerId={props.ledgerId} onClose={() => setOpen(false)} />}
    </>
  );
}

/** The rejected rows with their reasons, in the page, and as a CSV download. */
export function Rejected(props: { job: ImportJob; orgId: string; ledgerId: string; onClose: () => void }) {
  const path = `${LEDGER}/orgs/${props.orgId}/ledgers/${props.ledgerId}/imports/${props.job.id}/errors`;
  // the reason and line first: they are what a person reads; the original columns follow
  const req = useRequest(async (signal) => {
    const rows = parseCsv(await fetchText(path, signal));
    const head = rows[0] ?? [];
    const first = ['line', 'reason', 'row'].map((h) => head.lastIndexOf(h)).filter((i) => i >= 0);
    const order = [...first, ...head.map((_, i) => i).filter((i) => !first.includes(i))];
    return rows.map((r) => order.map((i) => r[i] ?? ''));
  }, [path]);
  const dl = useAction(() => download(path));
  const LIMIT = 500;
  return (
    <Dialog title={`Rejected rows of ${props.job.fileName ?? 'the import'}`} onClose={props.onClose} wide>
      <Async req={req} label="Loading the rejected rows…" empty={(rows) => rows.length < 2} emptyText="No rejected rows.">
        {(rows) => (
          <>
            <p class="muted">
              {fmtNumber(rows.length - 1)} rows were not imported; the <em>reason</em> column says why. Fix them in the file and import it again.
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
        <button type="button" disabled={dl.busy} onClick={() => void dl.run()}>
          Download rejected rows (CSV)
        </button>
      </div>
    </Dialog>
  );
}

/** Import jobs of the ledger, newest first; running ones update live. */
export function ImportHistory(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`;
  const [cursors, setCursors] = useState<string[]>([]);
  const req = useRequest((signal) => api<{ imports: ImportJob[]; nextCursor: string | null }>('GET', base, { query: { limit: 50, cursor: cursors.at(-1) }, signal }), [base, cursors.join()]);
  const [open, setOpen] = useState<ImportJob>();
  const running = req.data?.imports.some((i) => !done(i.status));
  useEffect(() => {
    if (!running || req.loading) return;
    const t = setTimeout(req.reload, 1000);
    return () => clearTimeout(t);
  }, [running, req.loading, req.data]);
  return (
    <>
      <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="imports" />
      <Async req={req} label="Loading imports…" empty={(d) => d.imports.length === 0} emptyText={<p>Nothing was imported into this ledger yet.</p>}>
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
                    <tr key={i.id}>
                      <td>
                        <Time iso={i.createdAt} />
                      </td>
                      <td class="break">{i.source === 'csv' ? i.fileName : 'API'}</td>
                      <td>{done(i.status) ? <span class={`badge ${i.status === 'failed' ? 'bad' : 'ok'}`} title={i.message ?? undefined}>{i.status}</span> : <JobProgress job={i} compact />}</td>
                      <td class="num">{fmtNumber(i.submitted)}</td>
                      <td class="num">{fmtNumber(i.imported)}</td>
                      <td class="num">{fmtNumber(i.invalid + i.duplicates)}</td>
                      <td class="num">{fmtNumber(i.jobChanges)}</td>
                      <td class="cell-actions">
                        {i.imported > 0 && (
                          <Link href={`/orgs/${orgId}/ledgers/${ledgerId}?importId=${i.id}`} class="small">
                            Contacts
                          </Link>
                        )}
                        {i.invalid + i.duplicates > 0 && (
                          <button type="button" class="link small" onClick={() => setOpen(i)}>
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
    </>
  );
}

