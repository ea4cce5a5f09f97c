import type { LoggerOptions } from 'pino';

/** Paths that may carry secrets; pino replaces them before a line is written. */
export const redactedPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'password',
  '*.password',
  'token',
  '*.token',
];

export type LogFormat = 'pretty' | 'json';

/**
 * Readable lines for a person at a terminal, one JSON object a line for machines: `format` when the
 * configuration names one (LOG_FORMAT), else pretty exactly when standard output is a terminal.
 */
export function loggerOptions(level: string, format?: LogFormat, isTTY: boolean = process.stdout.isTTY === true): LoggerOptions {
  const pretty = (format ?? (isTTY ? 'pretty' : 'json')) === 'pretty' && level !== 'silent';
  return {
    level,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' } } } : {}),
  };
}
