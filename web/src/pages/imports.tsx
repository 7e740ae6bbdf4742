import { useEffect, useRef, useState } from 'preact/hooks';
import { api, download, fetchText, LEDGER, parseCsv, upload, type ApiError } from '../api.ts';
import { navigate, useLocation } from '../router.ts';
import { Async, CursorPager, JobStatus, atLeast, Dialog, Empty, ErrorBox, explain, fmtCount, fmtDateTime, fmtNumber, FormError, Link, Loading, Notice, refocusWhenDone, Time, useAction, useRequest, useRole, asApiError } from '../ui.tsx';
import { LedgerHead, useRetryWithHead } from './ledger-head.tsx';

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
  /** Fields two columns or more could be: left out of the mappings, for the user to choose. */
  ambiguous: { field: string; columns: number[]; message: string }[];
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
// A choice is "not imported", the suggested first + last name pair, or a column by its place
// (`c3`): a header may be blank or repeat another, so its text cannot be the choice's value.
const SPLIT = 'split';
const NONE = '';
const col = (i: number) => `c${i}`;
const colIndex = (v: string | undefined) => (v && /^c\d+$/.test(v) ? Number(v.slice(1)) : -1);
/** What a column is called in the page: its header, or "(column 5)" when the header is blank. */
const colName = (columns: string[], i: number) => (columns[i]!.trim() === '' ? `(column ${i + 1})` : columns[i]!);
/** The columns whose header is the same text as column i's (trimmed): a mapping, which names columns by their text, cannot choose between them. */
const twinsOf = (columns: string[], i: number) => {
  const text = (c: string) => c.normalize('NFC').trim();
  return columns.flatMap((c, j) => (j !== i && text(c) === text(columns[i]!) ? [j] : []));
};
/** “a”, “b” and “c” */
const inWords = (items: string[]) => (items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`);
/** Columns by their place, 1 being the first: "columns 3 and 4". */
const places = (js: number[]) => `column${js.length === 1 ? '' : 's'} ${inWords(js.map((j) => String(j + 1)))}`;
/** What a column named twice is said to be, at the field it is chosen for (the import would refuse it). */
const twiceText = (columns: string[], js: number[]) =>
  columns[js[0]!]!.trim() === ''
    ? `${places(js)} have no header: the import cannot tell them apart. Give one of them a header in the file, then choose it.`
    : `The header names “${columns[js[0]!]!.trim()}” ${js.length === 2 ? 'twice' : `${js.length} times`} (${places(js)}): the import cannot tell them apart. Rename one of them in the file, then choose it.`;
/**
 * A field the preview left unmapped because several columns could be it, in the page's words
 * (the API's message tells of a JSON mapping the user never sees).
 */
function ambiguityText(columns: string[], a: Preview['ambiguous'][number], label: string, required: boolean): string {
  const twins = a.columns.filter((j) => twinsOf(columns, j).length > 0);
  const choosable = a.columns.filter((j) => !twins.includes(j));
  const names = (js: number[]) => inWords(js.map((j) => `“${colName(columns, j)}”`));
  if (twins.length === 0)
    return `${names(a.columns)} (${places(a.columns)}) could ${a.columns.length === 2 ? 'both' : 'all'} be the ${label}: choose the one to import${required ? '.' : ', or leave it not imported.'}`;
  return `${twiceText(columns, twins)}${choosable.length ? ` Or choose ${names(choosable)}.` : ''}`;
}
const DELIMITERS: Record<string, string> = { ',': 'comma', ';': 'semicolon', '\t': 'tab' };
const done = (s: ImportJob['status']) => s === 'completed' || s === 'failed';

/** The preview of one file: what the mapping step shows and what Import then sends. */
interface Previewed {
  file: File;
  p: Preview;
}
/** An upload in progress: `sent` once the whole file is on its way (the server may act on it, whatever the page does). */
interface Uploading {
  file: File;
  ctl: AbortController;
  pct: number;
  sent: boolean;
}

/** Choose a file → preview and mapping → start → live progress → result. */
export function ImportWizard(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const role = useRole(orgId);
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`;
  const wizardPath = `/orgs/${orgId}/ledgers/${ledgerId}/import`;
  // the import started (or followed) is in the URL, `?import=<id>`: Back then Forward, or a reload,
  // shows its progress and its result (a tester's case: the wizard opened afresh, with no sign of
  // the import that went on, which invited a second one)
  const importId = useLocation().query.get('import') ?? undefined;
  // the file being read for a preview; choosing another one cancels it, and an answer for a file
  // no longer chosen is dropped (a big file's preview could otherwise replace a small one's)
  const [reading, setReading] = useState<{ file: File; ctl: AbortController }>();
  const [readError, setReadError] = useState<ApiError>();
  const [preview, setPreview] = useState<Previewed>();
  const [choice, setChoice] = useState<Record<string, string>>({});
  const [uploading, setUploading] = useState<Uploading>();
  const [uploadError, setUploadError] = useState<ApiError>();
  const [cancelled, setCancelled] = useState<string>();
  const [job, setJob] = useState<ImportJob>();
  const [pollError, setPollError] = useState<ApiError>();
  const current = useRef<{ reading?: AbortController; uploading?: AbortController }>({});
  // Each step replaces the controls of the one before, and focus fell to <body> (a web tester's
  // case): the id of what gets focus once the next step is shown — its heading, or the file input.
  const focusNext = useRef<string | undefined>(undefined);
  // the role seen when the wizard opened: one lost meanwhile (an admin made the user a viewer; the
  // API answered 403 and the roles were reloaded) is said, not the wizard silently replaced
  const wasEditor = useRef(false);
  if (atLeast(role, 'editor')) wasEditor.current = true;
  // an import in the URL that this page did not start: read, then followed like one it started
  useEffect(() => {
    if (!importId || job?.id === importId) return;
    let stop = false;
    setPollError(undefined);
    api<ImportJob>('GET', `${base}/${encodeURIComponent(importId)}`).then(
      (j) => !stop && setJob(j),
      (e: unknown) => !stop && setPollError(asApiError(e)),
    );
    return () => {
      stop = true;
    };
  }, [importId]);
  // Leaving the wizard (another page of the app, back or forward) cancels what it still has on the
  // way, as "Choose another file" does: an upload still sending never reaches the server whole, so
  // no import is made for a file the user walked away from. One already sent is the server's: its
  // import goes on, and Import history shows it.
  useEffect(
    () => () => {
      current.current.reading?.abort();
      current.current.uploading?.abort();
    },
    [],
  );

  const choose = async (f: File) => {
    current.current.reading?.abort();
    const ctl = new AbortController();
    current.current.reading = ctl;
    setReading({ file: f, ctl });
    setReadError(undefined);
    setCancelled(undefined);
    try {
      const form = new FormData();
      form.append('file', f);
      const p = await api<Preview>('POST', `${base}/preview`, { form, signal: ctl.signal });
      if (ctl.signal.aborted) return;
      const c: Record<string, string> = {};
      for (const { field } of FIELDS) {
        const m = p.suggestedMapping[field];
        c[field] = Array.isArray(m) ? SPLIT : m === undefined || !p.columns.includes(m) ? NONE : col(p.columns.indexOf(m));
      }
      setChoice(c);
      focusNext.current = 'columns-title';
      setPreview({ file: f, p });
    } catch (e) {
      if (!ctl.signal.aborted) setReadError(asApiError(e));
    } finally {
      if (current.current.reading === ctl) {
        current.current.reading = undefined;
        setReading(undefined);
      }
    }
  };

  const start = async () => {
    if (!preview || uploading) return;
    const { file, p } = preview;
    const mapping: Record<string, string | null> = {};
    for (const { field } of FIELDS) {
      const v = choice[field] ?? NONE;
      if (v === SPLIT) continue; // keep the suggested first name + last name
      const i = colIndex(v);
      mapping[field] = i < 0 ? null : p.columns[i]!; // the server takes a column by its header's text ("" for a blank one)
    }
    const form = new FormData();
    form.append('mapping', JSON.stringify(mapping));
    form.append('file', file);
    const ctl = new AbortController();
    current.current.uploading = ctl;
    setUploadError(undefined);
    setUploading({ file, ctl, pct: 0, sent: false });
    try {
      const j = await upload<ImportJob>('POST', base, form, {
        signal: ctl.signal,
        onProgress: ({ sent, total }) => !ctl.signal.aborted && setUploading({ file, ctl, pct: Math.min(100, Math.floor((sent / total) * 100)), sent: sent >= total }),
      });
      if (!ctl.signal.aborted) {
        focusNext.current = 'run-title';
        // the preview goes: nothing on this page offers to import the file again
        setPreview(undefined);
        setJob(j);
        // the same entry, now naming the import (Back leaves the wizard, as before)
        navigate(`${wizardPath}?import=${encodeURIComponent(j.id)}`, { replace: true });
      }
    } catch (e) {
      if (!ctl.signal.aborted) setUploadError(asApiError(e));
    } finally {
      if (current.current.uploading === ctl) {
        current.current.uploading = undefined;
        setUploading(undefined);
      }
    }
  };

  // the import shown is the one the URL names (another entry of the wizard's path names none)
  const shownJob = job && job.id === importId ? job : undefined;
  const step = importId ? 3 : preview ? 2 : 1;
  const firstStep = useRef(true);
  useEffect(() => {
    const id = focusNext.current;
    focusNext.current = undefined;
    const first = firstStep.current;
    firstStep.current = false;
    if (id) document.getElementById(id)?.focus();
    else if (!first) {
      // a step shown by the URL (a running import followed, Back to the first step): the control
      // used went with the step before, and focus goes to the new step's heading, not to <body>
      const at = document.activeElement as HTMLElement | null;
      if (at && at !== document.body && at.isConnected) return;
      document.getElementById(step === 3 ? 'run-title' : step === 2 ? 'columns-title' : 'choose-title')?.focus();
    }
  }, [step]);
  // a file refused at preview: focus goes to the file input, the field the refusal names and where
  // the user acts next (it went to <main> after a 422 and stayed on the input after a 415)
  useEffect(() => {
    if (readError) document.getElementById('csv-file')?.focus();
  }, [readError]);
  // "Import" is disabled while the file is sent: focus goes to what the upload says (not <body>)
  useEffect(() => {
    const active = document.activeElement as HTMLButtonElement | null;
    if (uploading && (!active || active === document.body || active.disabled)) document.getElementById('upload-status')?.focus();
  }, [!!uploading]);

  // live progress: poll the job until it is done (a failed poll ends it: the effect runs again only
  // for a new answer)
  useEffect(() => {
    if (!shownJob || done(shownJob.status)) return;
    const job = shownJob;
    let stop = false;
    const t = setTimeout(async () => {
      try {
        const j = await api<ImportJob>('GET', `${base}/${job.id}`);
        if (!stop) setJob(j);
      } catch (e) {
        if (!stop) setPollError(asApiError(e));
      }
    }, 400);
    return () => {
      stop = true;
      clearTimeout(t);
    };
  }, [shownJob]);

  /** Back to step 1. An upload still sending is cancelled (the server gets no complete file, so no import). */
  const reset = () => {
    const up = current.current.uploading;
    if (up && uploading) {
      current.current.uploading = undefined;
      up.abort();
      setCancelled(`The upload of ${uploading.file.name} was cancelled; nothing was imported.`);
    } else setCancelled(undefined);
    focusNext.current = 'csv-file';
    current.current.reading?.abort();
    current.current.reading = undefined;
    setReading(undefined);
    setUploading(undefined);
    setPreview(undefined);
    setJob(undefined);
    setReadError(undefined);
    setUploadError(undefined);
    setPollError(undefined);
    if (importId) navigate(wizardPath, { replace: true });
  };

  if (!atLeast(role, 'editor') && wasEditor.current)
    return (
      <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="import">
        <RoleLost role={role} />
      </LedgerHead>
    );
  if (!atLeast(role, 'editor'))
    return (
      <>
        <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="import">
          <Empty>Importing needs the editor role.</Empty>
        </LedgerHead>
      </>
    );

  const missing = FIELDS.filter((f) => f.required && !(choice[f.field] ?? NONE));
  const shown = (i: number) => (i === 1 ? 'Choose a file' : i === 2 ? 'Check the columns' : 'Import');
  const splitName = preview && Array.isArray(preview.p.suggestedMapping.name) ? preview.p.suggestedMapping.name : undefined;
  /** The fields a column gives, as its header in the preview says. */
  const mapsTo = (columns: string[], j: number) =>
    FIELDS.filter((f) => {
      const v = choice[f.field];
      if (v === SPLIT) return splitName?.some((n) => columns.indexOf(n) === j) ?? false;
      return colIndex(v) === j;
    });
  /** The columns no field takes: said in words, so that none is left out unnoticed (a tester's "City / Location"). */
  const left = preview ? preview.p.columns.map((_, j) => j).filter((j) => mapsTo(preview.p.columns, j).length === 0) : [];
  /**
   * Columns chosen for two fields or more: said at those fields before anything is sent, in the
   * page's words (a web tester got the server's refusal, "mapping.title: … or one of them to null",
   * below the table, and no field marked).
   */
  const shared = preview ? preview.p.columns.map((_, j) => ({ j, fields: mapsTo(preview.p.columns, j) })).filter((x) => x.fields.length > 1) : [];
  const sharedFields = new Set(shared.flatMap((x) => x.fields.map((f) => f.field)));
  /** Fields given a column whose header another column has too: the import would refuse it, so it is said at the field. */
  const twice = preview
    ? FIELDS.flatMap((f) => {
        const j = colIndex(choice[f.field]);
        const twins = j < 0 ? [] : twinsOf(preview.p.columns, j);
        return twins.length ? [{ field: f.field, columns: [j, ...twins].sort((a, b) => a - b) }] : [];
      })
    : [];
  const ambiguous = new Map((preview?.p.ambiguous ?? []).map((a) => [a.field, a]));
  const describedBy = (field: string) =>
    [sharedFields.has(field) && 'columns-shared', ambiguous.has(field) && `ambiguous-${field}`, twice.some((t) => t.field === field) && `twice-${field}`].filter(Boolean).join(' ') || undefined;

  return (
    <>
      {/* read again as the import goes on (its count), and when a poll answers 404: the ledger was
          deleted meanwhile, and the heading then says it does not exist, instead of "Lost track of
          the import" under its old heading and tabs (a reviewer's case; Import history does the same) */}
      <LedgerHead refresh={[job?.status, pollError?.status === 404]} orgId={orgId} ledgerId={ledgerId} tab="import">
        <ol class="steps" aria-label="Import steps">
          {[1, 2, 3].map((i) => (
            <li key={i} class={i === step ? 'current' : i < step ? 'done' : ''} aria-current={i === step ? 'step' : undefined}>
              <span class="num">{i}</span> {shown(i)}
            </li>
          ))}
        </ol>

        {step === 1 && (
          <section class="card" aria-labelledby="choose-title">
            <h2 id="choose-title" tabIndex={-1}>Choose a CSV file</h2>
            {cancelled && <Notice onDismiss={() => setCancelled(undefined)}>{cancelled}</Notice>}
            <RunningImports base={base} wizardPath={wizardPath} />
            <p class="muted">
              A header row is needed. Columns such as <em>name</em> (or <em>first name</em> + <em>last name</em>), <em>company</em>, <em>title</em>, <em>email</em>, <em>linkedin</em> and <em>reference id</em> are recognised; you can change the mapping next. Comma, semicolon or tab separated; UTF-8.
            </p>
            <div class="field">
              <label for="csv-file">CSV file</label>
              <input
                id="csv-file"
                type="file"
                accept=".csv,.tsv,.txt,text/csv"
                aria-describedby={readError ? 'read-error' : undefined}
                onChange={(e) => {
                  const f = e.currentTarget.files?.[0];
                  if (f) void choose(f);
                }}
              />
            </div>
            {reading && <Loading label={`Reading ${reading.file.name}…`} />}
            {readError && <FileRefused error={readError} />}
          </section>
        )}

        {step === 2 && preview && (
          <section class="card" aria-labelledby="columns-title">
            <h2 id="columns-title" tabIndex={-1}>Check the columns</h2>
            <p class="muted">
              <strong>{preview.file.name}</strong>: {fmtCount(preview.p.rowCount, 'row')}, {DELIMITERS[preview.p.delimiter] ?? preview.p.delimiter} separated, {fmtCount(preview.p.columns.length, 'column')}. Each contact field below takes its value from the column you choose.
            </p>
            <div class="mapping">
              {FIELDS.map(({ field, label, required }) => (
                <div class="field" key={field}>
                  <label for={`map-${field}`}>
                    {label}
                    {required && <span class="req"> (required)</span>}
                  </label>
                  <select
                    id={`map-${field}`}
                    value={choice[field] ?? NONE}
                    disabled={!!uploading}
                    aria-invalid={sharedFields.has(field) || twice.some((t) => t.field === field) || undefined}
                    aria-describedby={describedBy(field)}
                    onChange={(e) => setChoice({ ...choice, [field]: e.currentTarget.value })}
                  >
                    <option value={NONE}>— not imported —</option>
                    {field === 'name' && splitName && <option value={SPLIT}>{splitName.join(' + ')}</option>}
                    {preview.p.columns.map((_, i) => (
                      <option key={i} value={col(i)}>
                        {colName(preview.p.columns, i)}
                      </option>
                    ))}
                  </select>
                  {ambiguous.has(field) && (
                    <p class="hint" id={`ambiguous-${field}`}>
                      {ambiguityText(preview.p.columns, ambiguous.get(field)!, label, required === true)}
                    </p>
                  )}
                  {twice
                    .filter((t) => t.field === field && !ambiguous.has(field))
                    .map((t) => (
                      <p class="form-error" role="alert" id={`twice-${field}`} key={field}>
                        {twiceText(preview.p.columns, t.columns)}
                      </p>
                    ))}
                </div>
              ))}
            </div>
            {missing.length > 0 && (
              <p class="form-error" role="alert">
                Choose a column for {missing.map((m) => m.label).join(' and ')}: every contact needs them.
              </p>
            )}
            {shared.length > 0 && preview && (
              <p class="form-error" role="alert" id="columns-shared">
                {shared.map((x) => `“${colName(preview.p.columns, x.j)}” is chosen for ${x.fields.map((f) => f.label).join(' and ')}`).join('; ')}: choose a column of its own for each field, or “— not imported —” for all but one.
              </p>
            )}
            {left.length > 0 && (
              <p class="muted" id="columns-left">
                Not imported: {left.map((j) => colName(preview.p.columns, j)).join(', ')}. To import one, choose it for a field above.
              </p>
            )}
            <h3>First rows of the file</h3>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="First rows of the file">
              <table class="preview">
                <thead>
                  <tr>
                    {preview.p.columns.map((_, j) => (
                      <th scope="col" key={j}>
                        {colName(preview.p.columns, j)}
                        <span class="maps">
                          {mapsTo(preview.p.columns, j)
                            .map((f) => `→ ${f.label}`)
                            .join(', ')}
                        </span>
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {preview.p.rows.map((r, i) => (
                    <tr key={i}>
                      {preview.p.columns.map((_, j) => (
                        <td key={j}>{r[j] ?? ''}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <FormError error={uploadError} />
            {uploading && (
              <p class="muted" role="status" id="upload-status" tabIndex={-1}>
                {uploading.sent ? `${uploading.file.name} has been sent; the server is checking it. The import can no longer be cancelled.` : `Uploading ${uploading.file.name}: ${uploading.pct}%. Leaving this page cancels the upload.`}
              </p>
            )}
            <div class="actions">
              <button type="button" class="secondary" disabled={uploading?.sent} onClick={reset}>
                Choose another file
              </button>
              <button type="button" disabled={missing.length > 0 || shared.length > 0 || twice.length > 0 || !!uploading} onClick={() => void start()}>
                {uploading ? 'Uploading…' : `Import ${fmtCount(preview.p.rowCount, 'row')}`}
              </button>
            </div>
          </section>
        )}

        {step === 3 && !shownJob && (
          <section class="card" aria-labelledby="run-title">
            <h2 id="run-title" tabIndex={-1}>
              Import
            </h2>
            {pollError ? (
              <>
                <ErrorBox error={pollError} title="This import cannot be shown." />
                <div class="actions">
                  <button type="button" class="secondary" onClick={reset}>
                    Choose a CSV file
                  </button>
                </div>
              </>
            ) : (
              <Loading label="Reading the import…" />
            )}
          </section>
        )}

        {step === 3 && shownJob && (
          <section class="card" aria-labelledby="run-title">
            <h2 id="run-title" tabIndex={-1}>{shownJob.status === 'completed' ? 'Import finished' : shownJob.status === 'failed' ? 'Import failed' : 'Importing…'}</h2>
            <JobProgress job={shownJob} />
            {pollError && <ErrorBox error={pollError} title="Lost track of the import; it goes on in the background." />}
            {done(shownJob.status) && <JobResult job={shownJob} orgId={orgId} ledgerId={ledgerId} />}
            <div class="actions">
              {done(shownJob.status) && (
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
      </LedgerHead>
    </>
  );
}

/**
 * A file the preview refused, said once: the API's message repeats "The upload cannot be imported"
 * (a tester read "This file cannot be imported. The upload cannot be imported: …"), so its reason
 * alone (`errors` at `file`, for a 415 as for a 422) follows the page's own words.
 */
function FileRefused(props: { error: ApiError }) {
  const e = props.error;
  const reason = e.status === 415 || e.status === 422 ? e.errors.find((x) => x.path === 'file')?.message : undefined;
  return (
    <div class="state error" role="alert" id="read-error">
      <p>
        {reason ? (
          <>
            <strong>This file cannot be imported:</strong> {reason.replace(/\.$/, '')}.
          </>
        ) : (
          <>
            <strong>This file cannot be imported.</strong> {explain(e)}
          </>
        )}
      </p>
    </div>
  );
}

/**
 * The ledger's imports still running, said on the first step with a link that follows each: one
 * started here and left (another tab, a link without its `?import=`) goes on, and nothing said so
 * (a tester's case: a second import of the same file was one click away).
 */
function RunningImports(props: { base: string; wizardPath: string }) {
  const req = useRequest((signal) => api<{ imports: ImportJob[] }>('GET', props.base, { query: { limit: 20 }, signal }), [props.base]);
  const running = (req.data?.imports ?? []).filter((i) => !done(i.status));
  if (!running.length) return null;
  const name = (i: ImportJob) => (i.source === 'csv' ? (i.fileName ?? 'an upload') : 'contacts sent by API');
  return (
    <>
      {running.map((i) => (
        <Notice key={i.id}>
          An import of {name(i)} is running ({fmtNumber(i.processed)} of {fmtCount(i.submitted, 'row')}, started <Time iso={i.createdAt} />).{' '}
          <Link href={`${props.wizardPath}?import=${encodeURIComponent(i.id)}`} aria-label={`Follow the import of ${name(i)}`}>
            Follow it
          </Link>{' '}
          or see <Link href={props.wizardPath.replace(/\/import$/, '/imports')}>Import history</Link>.
        </Notice>
      ))}
    </>
  );
}

/** The wizard refused midway: the user's role in the organization dropped below editor. Said, with focus on it. */
function RoleLost(props: { role: string | undefined }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <div class="state error" role="alert" tabIndex={-1} ref={ref}>
      <p>
        <strong>The import cannot go on.</strong> {props.role ? `Your role in this organization is now ${props.role}` : 'You are no longer a member of this organization'}, and importing needs the editor role. Ask an admin of the organization if you need it.
      </p>
    </div>
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
        <strong>{fmtNumber(j.processed)}</strong> of {fmtCount(j.submitted, 'row')} ({pct}%) · {j.status}
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

/** An import as a button or link names it beside its row's others: its file (or "by API") and when it started. */
const importName = (i: ImportJob) => `${i.source === 'csv' ? (i.fileName ?? 'upload') : 'by API'}, ${fmtDateTime(i.createdAt)}`;

/** Import jobs of the ledger, newest first; running ones update live. */
export function ImportHistory(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/imports`;
  const [cursors, setCursors] = useState<string[]>([]);
  const req = useRequest((signal) => api<{ imports: ImportJob[]; nextCursor: string | null }>('GET', base, { query: { limit: 50, cursor: cursors.at(-1) }, signal }), [base, cursors.join()]);
  const [open, setOpen] = useState<ImportJob>();
  const running = req.data?.imports.some((i) => !done(i.status));
  // a ledger deleted while its history is open answers 404: no more polling, and the heading is
  // read again, which then says the ledger does not exist
  const gone = req.error?.status === 404;
  useEffect(() => {
    if (!running || req.loading || gone) return;
    const t = setTimeout(req.reload, 1000);
    return () => clearTimeout(t);
  }, [running, req.loading, req.data, gone]);
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

