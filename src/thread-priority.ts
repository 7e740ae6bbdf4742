import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Nice values of the server's background threads. Linux keeps a nice value per thread: a thread
 * with a higher one yields the CPU to the event loop's requests while the cores are busy, and takes
 * what they leave over; on an idle machine it runs as fast as before.
 */
export const NICE = {
  /** bcrypt: a login storm must not take the CPU from every other request (RELIABILITY.md L1 scenario 4). */
  passwordHashing: 19,
  /** Reading and validating an import's rows (the CSV worker). */
  csvReading: 10,
  /** Parsing large JSON request bodies: a client sending 4 MiB batches must not slow every other request. */
  largeBodyParsing: 10,
  /** The command-line backup: a copy and an integrity check of the whole database beside a running server. */
  backupCommand: 10,
  // Not the bulk thread (imports, feeds): it holds the write lock a chunk at a time, and at nice 10
  // its chunks held it ten times as long on a busy core (docs/decisions.md, measured).
} as const;

/**
 * Gives the calling thread the nice value `nice` (/proc/thread-self names it). Elsewhere than on
 * Linux, or if refused, nothing changes and it returns false.
 */
export function setThreadNice(nice: number): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false; // not Linux, or no /proc: the thread keeps the process's priority
  }
}
