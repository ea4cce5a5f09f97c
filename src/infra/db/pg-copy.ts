import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type PgModule from 'pg';
import type CopyStreams from 'pg-copy-streams';

/**
 * `COPY … FROM STDIN` in PostgreSQL's text format, through pg-copy-streams: the bulk path of the
 * PostgreSQL place writer (`modules/places/places.writer.ts`) and the import bench's baseline.
 *
 * The text format: one line a row, fields separated by tabs, `\N` for null, and a backslash, tab,
 * newline or carriage return inside a value written as `\\`, `\t`, `\n`, `\r` (so no value can end a
 * row or the data early: `\.` becomes `\\.`). Numbers are written as JavaScript spells them, which
 * PostgreSQL reads back to the same double (`String` gives the shortest text that round-trips).
 */

export type CopyValue = string | number | bigint | null | undefined;

/** Loaded with the first COPY, as `pg` itself is (`database.ts`): only a process on PostgreSQL needs it. */
let copyFrom: typeof CopyStreams.from | undefined;

const special = /[\\\t\n\r]/;
const specials = /[\\\t\n\r]/g;
const escapes: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const escapeSpecial = (c: string): string => escapes[c]!;

/** One value as a field of COPY's text format. */
export function copyField(v: CopyValue): string {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'string') return special.test(v) ? v.replace(specials, escapeSpecial) : v;
  return String(v);
}

/** Text chunks of about this many characters are handed to the COPY stream. */
const CHUNK_CHARS = 256 * 1024;

/**
 * `count` rows of `width` values each, from a flat array (row after row), as COPY text in chunks of
 * ~256 KB; `prefix(i)`, when given, is written as the first field of row `i` (a row number, say).
 */
export function* copyTextOf(
  values: readonly CopyValue[],
  width: number,
  count: number,
  prefix?: (i: number) => CopyValue,
): Generator<string> {
  let chunk = '';
  for (let i = 0, o = 0; i < count; i++, o += width) {
    let line = prefix ? copyField(prefix(i)) + '\t' : '';
    for (let j = 0; j < width; j++) line += (j === 0 ? '' : '\t') + copyField(values[o + j]);
    chunk += line + '\n';
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}

/**
 * Runs `statement` (`COPY t (a, b) FROM STDIN`) on `client`, inside whatever transaction it has open, and
 * streams `text` into it; resolves with the rows PostgreSQL read. A row PostgreSQL rejects rejects the
 * promise with its error (the transaction is then aborted: the caller rolls it back).
 */
export async function copyIn(client: PgModule.ClientBase, statement: string, text: Iterable<string>): Promise<number> {
  copyFrom ??= (createRequire(import.meta.url)('pg-copy-streams') as typeof CopyStreams).from;
  const stream = client.query(copyFrom(statement));
  await pipeline(Readable.from(text, { objectMode: false }), stream);
  return stream.rowCount;
}

/** Rows (arrays of values) as COPY text in chunks of ~256 KB, for a source that yields rows one by one. */
export function* copyTextOfRows(rows: Iterable<readonly CopyValue[]>): Generator<string> {
  let chunk = '';
  for (const row of rows) {
    let line = '';
    for (let j = 0; j < row.length; j++) line += (j === 0 ? '' : '\t') + copyField(row[j]);
    chunk += line + '\n';
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}
