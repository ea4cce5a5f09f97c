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

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    ...(process.stdout.isTTY && level !== 'silent'
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' } } }
      : {}),
  };
}
