import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import pino from 'pino';
import { loggerOptions } from './logger.ts';

const pretty = (options: ReturnType<typeof loggerOptions>) =>
  (options.transport as { target?: string } | undefined)?.target === 'pino-pretty';

describe('log format', () => {
  test('is readable lines on a terminal and JSON when output goes elsewhere', () => {
    assert.equal(pretty(loggerOptions('info', undefined, true)), true);
    assert.equal(pretty(loggerOptions('info', undefined, false)), false);
  });

  test('LOG_FORMAT overrides the terminal check either way', () => {
    assert.equal(pretty(loggerOptions('info', 'json', true)), false);
    assert.equal(pretty(loggerOptions('info', 'pretty', false)), true);
  });

  test('a silent logger starts no pretty-printing transport', () => {
    assert.equal(pretty(loggerOptions('silent', 'pretty', true)), false);
  });

  test('JSON lines keep secrets out', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
    const log = pino(loggerOptions('info', 'json', true), sink);
    log.info({ req: { headers: { authorization: 'Bearer la_pat_secret' } }, password: 'hunter22' }, 'hello');
    const line = JSON.parse(lines[0]!) as { msg: string; password: string; req: { headers: { authorization: string } } };
    assert.equal(line.msg, 'hello');
    assert.equal(line.password, '[redacted]');
    assert.equal(line.req.headers.authorization, '[redacted]');
  });
});
