import type { Io } from './command.ts';

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

/** Resolves when SIGINT or SIGTERM arrives (the listener is removed by `dispose`). */
export function interrupted(): { signal: Promise<NodeJS.Signals>; dispose(): void } {
  let on: ((s: NodeJS.Signals) => void) | undefined;
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    on = (s) => resolve(s);
    process.once('SIGINT', on);
    process.once('SIGTERM', on);
  });
  return {
    signal,
    dispose() {
      process.off('SIGINT', on!);
      process.off('SIGTERM', on!);
    },
  };
}
