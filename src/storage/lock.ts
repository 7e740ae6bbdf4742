import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, fstatSync, linkSync, lstatSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { notPermitted, notPermittedCode } from './access-errors.ts';
import { isBusyError, StartupError } from './db.ts';

/**
 * One process per data folder: `<data>/contact-ledger.lock` holds the owner's pid (and, on Linux,
 * when that process started, so a pid reused after a crash does not keep the folder locked). It lets the
 * scheduler treat every lease found at start as left by a dead process (recovery sweep), and
 * stops a second server from writing into the same database.
 */

const held = new Set<string>();
/**
 * The kernel locks this process holds (kernelLock), by data folder: referenced here while held, as
 * a connection nothing references is closed by the garbage collector, which lets its lock go (a
 * holder that kept no handle of its DataLock, as a test's did, lost the lock at the next collection).
 */
const kernelLocks = new Map<string, Database.Database>();

/** The data folder is in use by another live process (usually the server). */
export class DataDirLockedError extends StartupError {
  override name = 'DataDirLockedError';
  /** The holder's pid as this process sees it; 0 for one it cannot see (another PID namespace). */
  readonly pid: number;
  /** Who holds the folder, as a message says it: `pid 123`, or more where this process cannot see it. */
  readonly holder: string;
  constructor(message: string, pid: number, holder = `pid ${pid}`) {
    super(message);
    this.pid = pid;
    this.holder = holder;
  }
}

/** Whether a process of this pid runs (as this process's PID namespace numbers it): one of another user's counts. */
export const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * When a process started, in clock ticks since boot (Linux: field 22 of /proc/<pid>/stat), so a
 * pid reused by another program after a crash is not mistaken for the lock's owner; undefined
 * where /proc is not available.
 */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces and parentheses: count fields after its last ')'
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** True when the lock's owner still runs: the pid is alive and, where known, started when the lock says. */
function ownerAlive(pid: number, started: string | undefined): boolean {
  if (!processAlive(pid)) return false;
  if (started === undefined) return true;
  const now = startTicks(pid);
  return now === undefined || now === started;
}

type Owner = { pid: number; started: string | undefined };

/** A lock file's text, `<pid>[ <start in clock ticks>]`, as its owner; undefined when it names none. */
function ownerIn(text: string): Owner | undefined {
  const [p, s] = text.trim().split(' ');
  const pid = Number.parseInt(p ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? { pid, started: s } : undefined;
}

/**
 * Opens a lock file for reading as it stands: a symbolic link is not followed, and a FIFO put there
 * does not hold the process until something writes to it.
 */
const openAsIs = (file: string) => openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);

/** The lock file's owner, as written: its pid and, where known, its start in clock ticks; undefined for anything but a file. */
function readLock(file: string): Owner | undefined {
  let fd: number;
  try {
    fd = openAsIs(file);
  } catch {
    return undefined; // none, vanished meanwhile, or a symbolic link
  }
  try {
    return fstatSync(fd).isFile() ? ownerIn(readFileSync(fd, 'utf8')) : undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * The live process holding the data folder (usually the server) and when it took it (the lock
 * file's time), or undefined when none does. `holder` names it as a refusal would: `pid 123`, or,
 * when it runs where this process cannot see it (another container on the same volume: its pid
 * means nothing here), what the kernel's lock on the folder tells (it was taken for no holder, so
 * `feed` run as root refused to hand its file over, and `keys rotate` named no running server).
 */
export function dataDirHolder(dataDir: string): { pid: number; since: number; holder: string } | undefined {
  const file = join(dataDir, 'contact-ledger.lock');
  const owner = readLock(file);
  if (held.has(file)) return undefined; // this process holds it
  const visible = owner !== undefined && ownerAlive(owner.pid, owner.started);
  if (!visible && !kernelLockHeldElsewhere(dataDir)) return undefined;
  const since = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
  return visible ? { pid: owner.pid, since, holder: `pid ${owner.pid}` } : { pid: 0, since, holder: unseenHolder(owner) };
}

/** A holder of the folder this process cannot see, as messages name it. */
const unseenHolder = (owner: Owner | undefined) =>
  `${owner ? `pid ${owner.pid} as its own PID namespace numbers it` : 'a process of another PID namespace'}: another container, or a process this one cannot see`;

/**
 * Whether another process holds the kernel's lock on the folder (kernelLock), asked without taking
 * it and without making its file: a read needs SQLite's shared lock, which the holder's exclusive
 * one refuses at once.
 */
function kernelLockHeldElsewhere(dataDir: string): boolean {
  let db: Database.Database | undefined;
  try {
    db = new Database(join(dataDir, KERNEL_LOCK_FILE), { readonly: true, fileMustExist: true, timeout: 0 });
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return false;
  } catch (err) {
    return isBusyError(err);
  } finally {
    db?.close();
  }
}

export interface DataLock {
  release(): void;
}

/** How often a process looks again at a lock that another live process is taking over this instant. */
const MAX_ATTEMPTS = 200;
/** Takeover claims of one stale lock left by processes that died while holding them (see takeOver). */
const MAX_GENERATIONS = 100;
const pauseArray = new Int32Array(new SharedArrayBuffer(4));
const pauseMs = (ms: number) => Atomics.wait(pauseArray, 0, 0, ms);

/** What stands where the lock file should be, when it is not a file: said in the refusal. */
function notAFile(file: string): string | undefined {
  try {
    const st = lstatSync(file);
    if (st.isFile()) return undefined;
    return st.isDirectory() ? 'a folder' : st.isSymbolicLink() ? 'a symbolic link' : st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device';
  } catch {
    return undefined; // gone meanwhile: inspect says so
  }
}

/**
 * The lock file as it is now: its inode (which file it is) and its owner; undefined when there is
 * none. Anything else in its place (a folder, a symbolic link: this process never makes either) is
 * refused with what it is, not taken for a lock nor removed.
 */
function inspect(file: string): { ino: bigint; owner: Owner | undefined } | undefined {
  let fd: number;
  try {
    fd = openAsIs(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    const denied = notPermittedCode(err);
    // another user's lock (a server run as root beside the service user's folder): who it is, not a bare EACCES (an operator tester's case)
    if (denied) throw notPermitted('cannot read', file, denied, `; it is uid ${ownerUid(file)}'s, whose contact-ledger may be using the data folder now: stop it first`);
    throw new StartupError(`cannot read ${file}: ${notAFile(file) ? `it is ${notAFile(file)}, not a lock file; remove it while no contact-ledger runs` : (err as Error).message}`);
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new StartupError(`cannot read ${file}: it is ${notAFile(file) ?? 'not a regular file'}, not a lock file; remove it while no contact-ledger runs`);
  }
  try {
    // the inode and the text of one and the same file, whatever happens to the name meanwhile
    const ino = fstatSync(fd, { bigint: true }).ino;
    return { ino, owner: ownerIn(readFileSync(fd, 'utf8')) };
  } finally {
    closeSync(fd);
  }
}

/** The uid that owns `file`, or `?` when it cannot be told. */
function ownerUid(file: string): number | '?' {
  try {
    return statSync(file).uid;
  } catch {
    return '?';
  }
}

const liveOther = (owner: Owner | undefined) => owner !== undefined && owner.pid !== process.pid && ownerAlive(owner.pid, owner.started);

/**
 * Takes the data folder for this process: first the kernel's lock on it (kernelLock), which holds
 * across PID namespaces, then the lock file below, which names the holder.
 *
 * The lock is made whole before it appears: this process writes its pid to a file of its own
 * (`mine`) and link()s it to `contact-ledger.lock`, which fails with EEXIST where a lock is (an
 * O_EXCL create would show others an empty lock until the pid is written, which they took for stale).
 *
 * A lock whose owner is dead is taken over atomically (a tester's case: each process that found it
 * stale removed it and tried again, and so removed the lock another had just made: two holders).
 * A takeover is a compare-and-swap on the lock's inode, made of operations that are atomic on a
 * local Linux file system (link(2) fails if the new name exists; rename(2) replaces its target in
 * one step):
 *  1. Claim the stale lock: link `mine` to `contact-ledger.lock.takeover-<inode>-<g>`. One
 *     process wins the claim of generation g; the others read the claim (made whole by link, like
 *     the lock) and, while its maker lives, back off and look at the lock again. A claim whose maker
 *     died (killed inside its takeover) is void for good and never removed: the next generation is
 *     claimed instead. So at any moment at most one live process holds a claim on a given inode.
 *  2. Holding the claim, look at the lock again: still that inode with a dead owner? Then rename
 *     `mine` over it. Nothing else can have replaced or removed that inode meanwhile: a lock is
 *     only ever removed by its owner (release; this one is dead) or replaced under a claim on its
 *     inode (ours), and link() never replaces one. If the lock changed, look again from the start.
 *  3. Remove the claim. An inode number may be used again by a later lock: a claim found for it
 *     then is either removed (finished), held by a live process (back off) or void (dead), as above,
 *     and step 2 checks the owner again, so an old claim never lets a live lock be replaced.
 * Files left by a process killed inside these few steps (`contact-ledger.lock.*`) are harmless.
 */
export function lockDataDir(dataDir: string): DataLock {
  const file = join(dataDir, 'contact-ledger.lock');
  if (held.has(file)) throw new StartupError(`the data folder ${dataDir} is already open in this process`);
  const lockedBy = (pid: number, holder = `pid ${pid}`) => new DataDirLockedError(`another contact-ledger (${holder}) is using the data folder ${dataDir}; stop it first`, pid, holder);
  const kernel = kernelLock(dataDir);
  if (kernel === 'held') {
    const owner = readLock(file);
    if (liveOther(owner)) throw lockedBy(owner!.pid);
    // held by a process this one cannot see: another container or PID namespace on the same folder
    throw lockedBy(0, unseenHolder(owner));
  }
  try {
    const lock = acquire(file, `the data folder ${dataDir}`, (owner) => {
      throw lockedBy(owner.pid);
    });
    if (kernel) kernelLocks.set(file, kernel);
    return {
      release() {
        lock.release();
        kernelLocks.delete(file);
        kernel?.close();
      },
    };
  } catch (err) {
    kernel?.close();
    throw err;
  }
}

/** The file whose lock the kernel holds for the data folder's owner (kernelLock). */
export const KERNEL_LOCK_FILE = 'contact-ledger.lock.db';

/**
 * The data folder's lock as the kernel keeps it: an exclusive SQLite lock (fcntl) on
 * `<data>/contact-ledger.lock.db`, held while the connection is open and let go by the kernel when
 * the process ends, however it ends. The lock file's pid and start time say who holds the folder
 * only within one PID namespace: a server in another container on the same volume looked dead, so a
 * second server started beside the first, and a restore run from the host replaced the database
 * under a running server, whose next acknowledged write was lost (an operator tester's case). File
 * locks are the kernel's, the same in every namespace. 'held': another process holds it;
 * undefined: this file system cannot lock (or the file cannot be made: the pid lock says why).
 */
function kernelLock(dataDir: string): Database.Database | 'held' | undefined {
  // Processes starting at once meet on SQLite's shared lock on the way to the exclusive one and may
  // all be turned away (each holds what the other waits for): 'held' is said only after several
  // tries, a few milliseconds apart, found it held every time.
  for (let attempt = 1; ; attempt++) {
    const got = tryKernelLock(dataDir);
    if (got !== 'held' || attempt === KERNEL_LOCK_TRIES) return got;
    pauseMs(2 + Math.floor(Math.random() * 10));
  }
}

/** How often kernelLock tries before it says the lock is held. */
const KERNEL_LOCK_TRIES = 10;

function tryKernelLock(dataDir: string): Database.Database | 'held' | undefined {
  let db: Database.Database | undefined;
  try {
    const file = join(dataDir, KERNEL_LOCK_FILE);
    db = new Database(file, { timeout: 10 });
    if (statSync(file).uid === process.getuid?.()) chmodSync(file, 0o600); // the owner's alone, as every file of the folder
    db.pragma('journal_mode = MEMORY'); // its content is nothing to keep: no journal file beside it
    db.pragma('locking_mode = EXCLUSIVE');
    // a write takes the exclusive lock, which this locking mode keeps until the connection closes
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); DELETE FROM holder;');
    db.prepare('INSERT INTO holder VALUES (?)').run(process.pid);
    db.exec('COMMIT');
    return db;
  } catch (err) {
    db?.close();
    return isBusyError(err) ? 'held' : undefined;
  }
}

/**
 * Runs `fn` holding `<file>.lock`, a lock made and taken over as the data folder's (lockDataDir),
 * for a file that processes which do not hold the data folder also rewrite (the JWT signing keys:
 * `keys rotate` runs beside the server). While another live process holds it, waits for it, up to
 * `waitMs`.
 */
export function withFileLock<T>(file: string, fn: () => T, waitMs = 10_000): T {
  const deadline = Date.now() + waitMs;
  const lock = acquire(`${file}.lock`, file, (owner) => {
    if (Date.now() >= deadline) throw new StartupError(`${file} is being changed by another process (pid ${owner.pid}) for more than ${waitMs / 1000} s; try again`);
    pauseMs(2);
  });
  try {
    return fn();
  } finally {
    lock.release();
  }
}

/**
 * Why a lock file could not be made: a folder this user may not write (put there by root, a
 * read-only mount) is a configuration error (exit 2, which the systemd unit does not restart; it
 * was exit 1, restarted for ever: an operator tester's case), anything else (a full disk) a failure.
 */
function notCreated(file: string, err: unknown): Error {
  const code = notPermittedCode(err);
  return code ? notPermitted('cannot create', file, code) : new StartupError(`cannot create ${file}: ${(err as Error).message}`);
}

/**
 * Takes the lock file `file` for this process. `heldBy` is called while another live process holds
 * it: it throws to give up, or returns to look again.
 */
function acquire(file: string, what: string, heldBy: (owner: { pid: number }) => void): DataLock {
  if (held.has(file)) throw new StartupError(`${what} is already open in this process`);
  const ownStart = startTicks(process.pid);
  const mine = `${file}.${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    const fd = openSync(mine, 'wx', 0o600);
    try {
      writeSync(fd, `${process.pid}${ownStart ? ` ${ownStart}` : ''}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    try {
      rmSync(mine, { force: true });
    } catch {
      // a folder this user may not enter: nothing was made in it
    }
    throw notCreated(file, err);
  }
  const own = statSync(mine, { bigint: true }).ino;
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        linkSync(mine, file);
        return hold(file, own);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw notCreated(file, err);
      }
      const found = inspect(file);
      if (!found) continue; // released meanwhile
      if (liveOther(found.owner)) {
        heldBy(found.owner!);
        attempt--; // waiting for a live holder is not a failed attempt
        continue;
      }
      const outcome = takeOver(file, found.ino, mine);
      if (outcome === 'taken') return hold(file, own);
      if (outcome === 'busy') pauseMs(5);
    }
  } finally {
    rmSync(mine, { force: true }); // the lock is another name of the same file
  }
  throw new StartupError(`cannot lock ${what}`);
}

/** Step 1 to 3 of lockDataDir's takeover of the stale lock `ino`. */
function takeOver(file: string, ino: bigint, mine: string): 'taken' | 'busy' | 'changed' {
  let claim: string | undefined;
  for (let g = 0; g < MAX_GENERATIONS && !claim; g++) {
    const name = `${file}.takeover-${ino}-${g}`;
    try {
      linkSync(mine, name);
      claim = name;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new StartupError(`cannot take over ${file}: ${(err as Error).message}`);
      const maker = readLock(name);
      if (!maker) return 'changed'; // its maker has just finished or given up
      if (liveOther(maker)) return 'busy';
      // its maker died within its takeover: that claim is void, the next generation decides
    }
  }
  if (!claim) throw new StartupError(`cannot take over ${file}: ${MAX_GENERATIONS} takeovers of it were killed halfway; remove ${file}* while no contact-ledger runs`);
  try {
    const now = inspect(file);
    if (!now || now.ino !== ino || liveOther(now.owner)) return 'changed';
    renameSync(mine, file);
    return 'taken';
  } finally {
    rmSync(claim, { force: true });
  }
}

function hold(file: string, ino: bigint): DataLock {
  held.add(file);
  return {
    release() {
      if (!held.delete(file)) return;
      // only our own lock (it is only ever replaced when its owner is dead, but never remove another's)
      if (inspect(file)?.ino === ino) rmSync(file, { force: true });
    },
  };
}
