import { EXIT_FAILURE, type Io } from './command.ts';

export interface Progress {
  /** Reports progress; `total` undefined when unknown. Throttled: call it as often as you like. */
  update(done: number, total: number | undefined, detail?: string): void;
  /** Clears the bar (terminal) before the final message. */
  done(): void;
}

const BAR = 30;

/**
 * Progress of `import` and `feed` on stderr: a bar redrawn in place on a terminal (10 times a
 * second at most), plain lines every few seconds otherwise (logs, CI, systemd), from the first
 * record or row processed.
 */
export function progress(io: Io, label: string, opts: { lineEveryMs?: number } = {}): Progress {
  const every = io.isTTY ? 100 : (opts.lineEveryMs ?? 2000);
  let last = 0;
  let drawn = false;
  let lastLine = '';
  return {
    update(done, total, detail) {
      // off a terminal a line stays in the log: none before there is something to count (a line of zeros beside the result)
      if (!io.isTTY && done === 0) return;
      const now = Date.now();
      if (now - last < every) return;
      last = now;
      const pct = total ? Math.min(100, Math.floor((done / total) * 100)) : undefined;
      const counts = total ? `${done}/${total} (${pct}%)` : `${done}`;
      if (io.isTTY) {
        const filled = pct === undefined ? 0 : Math.round((pct / 100) * BAR);
        const bar = pct === undefined ? '' : `[${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] `;
        io.write(`\r\x1b[2K${label} ${bar}${counts}${detail ? ` ${detail}` : ''}`);
        drawn = true;
      } else {
        const line = `${label}: ${counts}${detail ? ` ${detail}` : ''}`;
        if (line !== lastLine) io.err(line);
        lastLine = line;
      }
    },
    done() {
      if (drawn) io.write('\r\x1b[2K');
      drawn = false;
    },
  };
}

/**
 * The signals that stop a command or the server in order: Ctrl-C, a service manager's stop, and a
 * terminal or session that closed (SIGHUP: by default it killed them with nothing let go — the
 * lock, a backup's partial file, an import's job not handed back; an operator tester's case).
 */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Resolves when one of STOP_SIGNALS arrives, and `fired` says whether one has (the listeners are removed by `dispose`). */
export function interrupted(): { signal: Promise<NodeJS.Signals>; readonly fired: boolean; dispose(): void } {
  let on: ((s: NodeJS.Signals) => void) | undefined;
  let fired = false;
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    on = (s) => {
      fired = true;
      resolve(s);
    };
    for (const s of STOP_SIGNALS) process.once(s, on);
  });
  return {
    signal,
    get fired() {
      return fired;
    },
    dispose() {
      for (const s of STOP_SIGNALS) process.off(s, on!);
    },
  };
}

/**
 * Waits for a job that this command's own scheduler runs (the server is stopped): `check` is called
 * every 100 ms and ends the wait with the exit code it returns. On SIGINT or SIGTERM (listened to
 * from `stop`, set up before the job was made, so that a signal at any moment is seen) the
 * scheduler is stopped first, which hands the job back with its progress (its chunk ends, the lease
 * is released), and only then is `onInterrupt()` written to stderr, so the progress it reads is
 * what the job kept; exit code 1 — unless that chunk was the last and the job ended, which `check`
 * then reports as usual. The caller's `rt.close()` then checkpoints the WAL and releases the
 * lock, and the server finishes the job when it starts. Shared by `import` and `feed`.
 */
export async function waitForOwnJob(io: Io, stop: { readonly fired: boolean }, scheduler: { stop(): Promise<void> }, check: () => number | undefined, onInterrupt: () => string): Promise<number> {
  for (;;) {
    const code = check();
    if (code !== undefined) return code;
    if (stop.fired) {
      await scheduler.stop();
      // the chunk it let end may have been the last one: then the job is done, not interrupted
      const ended = check();
      if (ended !== undefined) return ended;
      io.err(onInterrupt());
      return EXIT_FAILURE;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
