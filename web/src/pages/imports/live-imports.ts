import { api } from '../../api.ts';
import { useReloadWhile, useRequest, type Request } from '../../ui.tsx';
import { done, type ImportJob } from './import-job.tsx';

/**
 * A page of the ledger's imports (`base`: its imports' URL), asked again every second while one of
 * them runs: Import history's rows and the wizard's note of imports still running follow them live.
 * `gone`: the ledger was deleted meanwhile (404), and nothing is asked any more.
 */
export function useLiveImports(base: string, query: { limit: number; cursor?: string }): { req: Request<{ imports: ImportJob[]; nextCursor: string | null }>; gone: boolean } {
  const req = useRequest((signal) => api<{ imports: ImportJob[]; nextCursor: string | null }>('GET', base, { query, signal }), [base, query.limit, query.cursor]);
  const running = req.data?.imports.some((i) => !done(i.status));
  const gone = req.error?.status === 404;
  useReloadWhile(req, Boolean(running) && !gone, 1000);
  return { req, gone };
}
