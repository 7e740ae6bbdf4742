import { useState } from 'preact/hooks';
import { api, download, LEDGER } from '../api.ts';
import { Async, CursorPager, JobStatus, Empty, ErrorBox, fmtNumber, FormError, PageHead, Time, useAction, useReloadWhile, useRequest, useSession } from '../ui.tsx';

interface FeedJob {
  id: string;
  source: 'api' | 'cli' | 'inbox';
  fileName: string | null;
  format: string;
  gzip: boolean;
  status: 'pending' | 'processing' | 'completed' | 'failed';
  received: number;
  invalid: number;
  stale: number;
  personsUpdated: number;
  contactsMatched: number;
  jobChanges: number;
  infoChanges: number;
  createdAt: string;
  finishedAt: string | null;
  message: string | null;
}
const TYPES: Record<string, string> = { csv: 'text/csv', ndjson: 'application/x-ndjson', jsonl: 'application/x-ndjson', json: 'application/json' };
const SOURCES: Record<FeedJob['source'], string> = { api: 'upload', cli: 'command line', inbox: 'inbox folder' };

/** Superusers: the person-data feed jobs (uploads, CLI and the inbox folder) and a feed upload. */
export function Feed() {
  const s = useSession();
  const [cursors, setCursors] = useState<string[]>([]);
  const superuser = Boolean(s.principal.user?.superuser);
  // not asked for by others: its 403 was a console error on a page that says so anyway (a web tester's case)
  const req = useRequest(
    (signal) => (superuser ? api<{ feeds: FeedJob[]; nextCursor: string | null }>('GET', `${LEDGER}/feed`, { query: { limit: 50, cursor: cursors.at(-1) }, signal }) : Promise.resolve({ feeds: [] as FeedJob[], nextCursor: null })),
    [cursors.join(), superuser],
  );
  const running = req.data?.feeds.some((f) => f.status === 'pending' || f.status === 'processing');
  useReloadWhile(req, Boolean(running), 1500);
  const [file, setFile] = useState<File>();
  const upload = useAction(async () => {
    const f = file!;
    const ext = f.name.toLowerCase().replace(/\.gz$/, '').split('.').pop() ?? '';
    const type = TYPES[ext];
    if (!type) throw new Error('Choose a .csv, .jsonl, .ndjson or .json file (optionally .gz).');
    await api('POST', `${LEDGER}/feed`, { raw: f, contentType: type });
    setFile(undefined);
    req.reload();
  });
  const dl = useAction((id: string) => download(`${LEDGER}/feed/${id}/errors`));
  // the page's heading also when it is refused (a screen-reader user navigates by headings: a web tester's case)
  if (!superuser)
    return (
      <>
        <PageHead title="Person-data feed" />
        <Empty>The feed is managed by superusers.</Empty>
      </>
    );
  const inbox = req.data?.feeds.filter((f) => f.source === 'inbox') ?? [];
  return (
    <>
      <PageHead title="Person-data feed" sub="Records from your data provider update the people store; matched contacts get job and information changes." />
      <div class="detail two">
        <section class="card" aria-labelledby="up-title">
          <h2 id="up-title">Upload feed records</h2>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              if (file) void upload.run();
            }}
          >
            <div class="field">
              <label for="feed-file">Feed file (CSV, NDJSON or a JSON array; gzip allowed)</label>
              <input id="feed-file" type="file" accept=".csv,.jsonl,.ndjson,.json,.gz" onChange={(e) => setFile(e.currentTarget.files?.[0])} />
            </div>
            <FormError error={upload.error} />
            <div class="actions left">
              <button type="submit" disabled={!file || upload.busy}>
                {upload.busy ? 'Uploading…' : 'Start feed job'}
              </button>
            </div>
          </form>
        </section>
        <section class="card" aria-labelledby="inbox-title">
          <h2 id="inbox-title">Inbox folder</h2>
          <p class="muted">
            Files dropped into <code>&lt;data&gt;/inbox/</code> (<code>*.jsonl</code>, <code>*.jsonl.gz</code>, <code>*.csv</code>) are picked up within seconds, then moved to <code>inbox/done/</code> or <code>inbox/failed/</code>.
          </p>
          {req.data &&
            (inbox.length ? (
              <p>
                Last inbox file: <strong class="break">{inbox[0]!.fileName}</strong>, {inbox[0]!.status}, <Time iso={inbox[0]!.createdAt} />.
              </p>
            ) : (
              <p class="muted">No inbox file on this page of jobs.</p>
            ))}
        </section>
      </div>
      {dl.error && <ErrorBox error={dl.error} title="The download failed." />}
      <h2 class="section">Feed jobs</h2>
      <Async req={req} label="Loading feed jobs…" empty={(d) => d.feeds.length === 0} emptyText="No feed was ingested yet.">
        {(d) => (
          <>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="Feed jobs">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Created</th>
                    <th scope="col">Source</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="num">Records</th>
                    <th scope="col" class="num">Invalid</th>
                    <th scope="col" class="num">Contacts matched</th>
                    <th scope="col" class="num">Job changes</th>
                    <th scope="col" class="num">Info changes</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.feeds.map((f) => (
                    <tr key={f.id} class={f.status === 'failed' ? 'failed' : undefined}>
                      <td>
                        <Time iso={f.createdAt} />
                      </td>
                      <td class="break">
                        {SOURCES[f.source]}
                        {f.fileName ? `: ${f.fileName}` : ''}
                      </td>
                      <td class="status">
                        <JobStatus status={f.status} message={f.message} />
                      </td>
                      <td class="num">{fmtNumber(f.received)}</td>
                      <td class="num">{fmtNumber(f.invalid)}</td>
                      <td class="num">{fmtNumber(f.contactsMatched)}</td>
                      <td class="num">{fmtNumber(f.jobChanges)}</td>
                      <td class="num">{fmtNumber(f.infoChanges)}</td>
                      <td class="cell-actions">
                        {f.invalid > 0 && (
                          <button type="button" class="link small" onClick={() => void dl.run(f.id)}>
                            Invalid records
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
    </>
  );
}
