import type { DeleteStep } from './chunk-pacing.ts';

/**
 * The rejected rows a kind of job keeps for its errors CSV (an import's rows, a feed's records),
 * as the nightly retention sees them: they quote what files said about people, so they go
 * REJECTIONS_KEEP_DAYS after their job ended (docs/operations.md, What the database forgets).
 */
export interface RejectionsStore {
  /** The first job after `afterId` (in id order) that still has rejected rows, with when it ended (null: it has not). */
  nextWithRejections(afterId: string): { id: string; finishedAt: number | null } | undefined;
  /** Deletes up to `n` rejected rows of job `id` (fewer when they are large); returns how many went (0: none left). */
  deleteRejections(id: string, n: number): number;
}

/**
 * The retention of one store as a step of chunk-pacing.ts deleteInChunks: the rejected rows of jobs
 * that ended before `endedBefore` go. It walks the jobs that have rejected rows in id order from
 * where the last call stopped (one seek a job, so jobs kept are looked at once a night, not again
 * for every chunk), deletes once, and returns how many jobs it looked at plus how many rows it
 * deleted (0: done);
 * `deleted` counts the rows that went, `jobs` the jobs whose rows went.
 */
export function rejectionsPruner(store: RejectionsStore, endedBefore: number): { step: DeleteStep; deleted: () => number; jobs: () => number } {
  let after = '';
  let current: string | undefined;
  let deleted = 0;
  let jobs = 0;
  return {
    step(n) {
      let work = 0;
      while (work < n) {
        if (current === undefined) {
          const next = store.nextWithRejections(after);
          if (!next) return work;
          work++;
          after = next.id;
          if (next.finishedAt === null || next.finishedAt >= endedBefore) continue;
          current = next.id;
          jobs++;
        }
        const gone = store.deleteRejections(current, n - work);
        if (gone === 0) {
          current = undefined; // none of its rows left
          continue;
        }
        deleted += gone;
        return work + gone; // one delete a chunk: its size is the store's to bound
      }
      return work;
    },
    deleted: () => deleted,
    jobs: () => jobs,
  };
}
