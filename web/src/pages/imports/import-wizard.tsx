// The CSV import wizard (`…/import`), step by step: choose a file (with the imports still running),
// check the columns (column-choice.tsx), then the upload and the import followed to its result.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, LEDGER, upload, type ApiError } from '../../api.ts';
import { navigate, useLocation } from '../../router.ts';
import { asApiError, atLeast, Empty, ErrorBox, explain, fmtCount, FormError, Link, Loading, Notice, useRole } from '../../ui.tsx';
import { LedgerHead } from '../ledger-head.tsx';
import { checkChoice, ColumnChoice, mappingOf, suggestedChoice, type Choice, type Preview } from './column-choice.tsx';
import { done, JobProgress, type ImportJob } from './import-job.tsx';
import { JobResult } from './job-result.tsx';
import { RunningImports } from './running-imports.tsx';

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
  const [choice, setChoice] = useState<Choice>({});
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
      setChoice(suggestedChoice(p));
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
    const form = new FormData();
    form.append('mapping', JSON.stringify(mappingOf(p, choice)));
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

  const shown = (i: number) => (i === 1 ? 'Choose a file' : i === 2 ? 'Check the columns' : 'Import');
  const check = preview && checkChoice(preview.p, choice);

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

        {step === 2 && preview && check && (
          <section class="card" aria-labelledby="columns-title">
            <h2 id="columns-title" tabIndex={-1}>Check the columns</h2>
            <ColumnChoice fileName={preview.file.name} p={preview.p} choice={choice} check={check} disabled={!!uploading} onChoice={setChoice} />
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
              <button type="button" disabled={check.blocked || !!uploading} onClick={() => void start()}>
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
