import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { copyOwnerOnly } from '../storage/durable-files.ts';
import { uploadTmpDir } from '../ledger/index.ts';
import { EXIT_FAILURE, EXIT_OK, UsageError, type Io, type ParsedArgs } from './command.ts';
import { cliCaller, openForCommand, requireFile } from './common.ts';
import { interrupted, progress, waitForOwnJob } from './progress.ts';

/**
 * `contact-ledger import <orgId> <ledgerId> <file.csv>`: the CSV import of the API (same checks,
 * same job, same counts) run from the machine, with the server stopped. Ctrl-C hands the job back
 * with its progress, and the next `serve` finishes it.
 */
export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  if (args.positionals.length !== 3) throw new UsageError('usage: contact-ledger import <orgId> <ledgerId> <file.csv>');
  const [orgId, ledgerId, file] = args.positionals as [string, string, string];
  requireFile(file);
  const rt = await openForCommand(io, config, `upload the file through the API instead (POST /api/ledger/v1/orgs/${orgId}/ledgers/${ledgerId}/imports), or stop the server`);
  const stop = interrupted();
  let tmp: string | undefined;
  try {
    // The import job takes its file over (moves it): give it a copy, never the operator's file;
    // the copy is the owner's alone (0600), whatever the mode of the operator's file.
    tmp = join(uploadTmpDir(config.dataDir), `cli-${process.pid}-${Date.now()}`);
    mkdirSync(tmp, { recursive: true, mode: 0o700 });
    const copy = join(tmp, basename(file));
    copyOwnerOnly(file, copy);
    const { job } = await rt.ledger.imports.createCsvImport(cliCaller(), orgId, ledgerId, { path: copy, fileName: basename(file) }, args.flags.mapping as string | undefined).catch((err: unknown) => {
      // a --mapping the API would refuse (not JSON, a column the file lacks) is a bad argument: the same command cannot succeed (exit 2)
      if (err instanceof AppError && err.status === 422 && err.errors.some((e) => e.path === 'mapping' || e.path.startsWith('mapping.'))) throw new UsageError(`--mapping: ${err.message}`);
      // no such organization or ledger: the same command cannot succeed either
      // (the organization named first, when it is the one missing: "No ledger" misled a tester)
      if (err instanceof AppError && err.status === 404) throw new UsageError(rt.identity.repos.orgs.findOrgById(orgId) ? err.message : `No organization with id ${orgId}.`);
      throw err;
    });
    if (job.status !== 'failed') io.err(`${job.id}: importing ${job.submitted} rows of ${basename(file)} into ${ledgerId}`); // failed: a file that cannot be read
    rt.scheduler.start({ tasks: [] }); // jobs only: webhook deliveries and the rest wait for the server
    const bar = progress(io, job.id);
    const processed = (s: { imported: number; duplicates: number; invalid: number }) => s.imported + s.duplicates + s.invalid;
    return await waitForOwnJob(
      io,
      stop,
      rt.scheduler,
      () => {
        const s = rt.ledger.imports.get(orgId, ledgerId, job.id);
        bar.update(processed(s), s.submitted, `${s.imported} imported, ${s.duplicates} duplicates, ${s.invalid} invalid`);
        if (s.status !== 'completed' && s.status !== 'failed') return undefined;
        bar.done();
        const summary = `${s.id} ${s.status}: ${s.submitted} rows, ${s.imported} imported, ${s.duplicates} duplicates, ${s.invalid} invalid`;
        if (s.status === 'failed') {
          io.err(`${summary}. ${s.message ?? ''}`);
          return EXIT_FAILURE;
        }
        io.out(s.duplicates + s.invalid ? `${summary} (rejected rows: GET /api/ledger/v1/orgs/${orgId}/ledgers/${ledgerId}/imports/${s.id}/errors)` : summary);
        return EXIT_OK;
      },
      () => {
        bar.done();
        return `${job.id}: interrupted after ${processed(rt.ledger.imports.get(orgId, ledgerId, job.id))} of ${job.submitted} rows; the job keeps its progress and the server finishes it when it starts`;
      },
    );
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    stop.dispose();
    await rt.close();
  }
}
