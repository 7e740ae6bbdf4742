import { fmtCount, fmtNumber, Link, Notice, Time } from '../../ui.tsx';
import { done, type ImportJob } from './import-job.tsx';
import { useLiveImports } from './live-imports.ts';

/**
 * The ledger's imports still running, said on the first step with a link that follows each: one
 * started here and left (another tab, a link without its `?import=`) goes on, and nothing said so
 * (a tester's case: a second import of the same file was one click away).
 */
export function RunningImports(props: { base: string; wizardPath: string }) {
  // asked again while one runs, as Import history is: its count goes on, and a note goes once its import has ended
  const { req } = useLiveImports(props.base, { limit: 20 });
  const running = (req.data?.imports ?? []).filter((i) => !done(i.status));
  if (!running.length) return null;
  const name = (i: ImportJob) => (i.source === 'csv' ? (i.fileName ?? 'an upload') : 'contacts sent by API');
  return (
    <>
      {running.map((i) => (
        <Notice key={i.id} quiet>
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
