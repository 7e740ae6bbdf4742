import { api } from '../../api.ts';
import { fmtCount, fmtNumber, Link, Notice, Time, useRequest } from '../../ui.tsx';
import { done, type ImportJob } from './import-job.tsx';

/**
 * The ledger's imports still running, said on the first step with a link that follows each: one
 * started here and left (another tab, a link without its `?import=`) goes on, and nothing said so
 * (a tester's case: a second import of the same file was one click away).
 */
export function RunningImports(props: { base: string; wizardPath: string }) {
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
