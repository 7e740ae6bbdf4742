import { statfsSync } from 'node:fs';

/**
 * Free space that must appear where a file was refused for lack of space before the refusal is
 * taken as over without a file stored there since: more than small changes (a -wal cut back, a log
 * rotated) and less than what a freed disk shows.
 */
const GROWN_BYTES = 64 * 1024 ** 2;

/** A size as the commands say it: `12.3 MiB` (unknown: `? MiB`). */
export const mib = (bytes: number | undefined): string => (bytes === undefined || Number.isNaN(bytes) ? '? MiB' : `${(bytes / 1024 ** 2).toFixed(1)} MiB`);

/** Bytes this process may still write on the file system of `dir`; undefined when it cannot be asked. */
export function freeBytes(dir: string): number | undefined {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

/**
 * Whether a file the server writes outside the database (an upload) was last refused for lack of
 * space (a 507), for /readyz's diskSpace (docs/operations.md, Monitoring): from the refusal until
 * a file is stored there whole again, or the free space there has grown by GROWN_BYTES since —
 * the operator freed space. A database write that commits says nothing about it: the uploads
 * need room for a whole file (a tester's /readyz said "ready" after a CSV upload got 507).
 */
export class FileSpace {
  private refusal: { dir: string; freeBytes: number } | undefined;

  /** A file in `dir` could not be written for lack of space; call after its partial file is removed. */
  refused(dir: string): void {
    this.refusal = { dir, freeBytes: freeBytes(dir) ?? 0 };
  }

  /** A file was stored whole: there is room again. */
  stored(): void {
    this.refusal = undefined;
  }

  /** True while the last refusal stands. */
  get short(): boolean {
    if (!this.refusal) return false;
    const free = freeBytes(this.refusal.dir);
    if (free !== undefined && free >= this.refusal.freeBytes + GROWN_BYTES) this.refusal = undefined;
    return this.refusal !== undefined;
  }
}
