import fs from 'node:fs';
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * JSON logs, one object per line (pino). Secret-bearing fields are censored wherever they appear,
 * as a second line of defence: code never passes request bodies or credentials to the logger.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'contact-ledger' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: [
          'password', '*.password', 'currentPassword', '*.currentPassword', 'clientSecret', '*.clientSecret',
          'refreshToken', '*.refreshToken', 'accessToken', '*.accessToken', 'secret', '*.secret', 'token', '*.token',
          'authorization', '*.authorization', 'headers.authorization', 'req.headers.authorization', 'headers.cookie',
        ],
        censor: '[redacted]',
      },
    },
    destination ?? logDestination(1, false),
  );
}

/** How much a log destination that cannot take more keeps waiting before it drops lines. */
export const LOG_BUFFER_MAX = 16 * 1024 * 1024;

/**
 * Where log lines go: a file descriptor (1 for the server, 2 for the CLI). A destination that fails
 * to write (its disk full, ENOSPC; a closed pipe) must not take the service with it: pino's writer
 * emits 'error', which nobody handled, so a full log disk stopped the server with "Unhandled 'error'
 * event" while its database disk had room (a tester's case). The lines it could not write wait, up
 * to LOG_BUFFER_MAX, and go out with the next line once it can; past that they are dropped.
 */
export function logDestination(fd: number, sync: boolean): DestinationStream {
  const dest = pino.destination({ fd, sync, maxLength: LOG_BUFFER_MAX });
  // Failing since its last successful write. pino flushes the destination synchronously when the
  // process exits, and that flush (sonic-boom 4) retries a write that fails for good (ENOSPC) for
  // ever: with a full log disk the server never exited. What is left then is dropped instead, and
  // a flush that meets such a failure first gives up (below).
  let failing = false;
  dest.on('error', () => (failing = true)); // nowhere left to say it; the service goes on
  dest.on('write', () => (failing = false));
  const flushSync = dest.flushSync.bind(dest);
  dest.flushSync = () => {
    if (failing) return;
    // The disk may have filled since the last write: a write failing for good (not EAGAIN/EBUSY,
    // nor these more than a few times) is taken as done, so that the flush ends and drops the rest.
    const writeSync = fs.writeSync;
    let busy = 0;
    fs.writeSync = ((fd: number, data: string | NodeJS.ArrayBufferView, ...rest: unknown[]) => {
      try {
        return (writeSync as (...a: unknown[]) => number)(fd, data, ...rest);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if ((code === 'EAGAIN' || code === 'EBUSY') && ++busy <= 20) throw err;
        failing = true;
        return typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
      }
    }) as typeof fs.writeSync;
    try {
      if (!failing) flushSync();
    } finally {
      fs.writeSync = writeSync;
    }
  };
  return dest;
}
