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
    destination ?? pino.destination({ fd: 1, sync: false }),
  );
}
