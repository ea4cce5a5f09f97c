import { pipeline } from 'node:stream';
import { parse } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import { AppError } from '../../../infra/errors.ts';
import type { OpenOptions, ReadResult, SourceReader } from '../importer.types.ts';
import { openTextSource, type TextSource } from './text-source.ts';

/** A CSV row keyed by header name, or a parsed NDJSON object. */
export type CsvRow = Record<string, string>;
export type JsonObject = Record<string, unknown>;

export type RowResult<T> = { ok: true; row: T } | { ok: false; reason: string };

// ---------------------------------------------------------------------------------------------------------
// Detection helpers: the head is the first 64 KiB of the file, decompressed, not yet decoded.

const utf8Bom = Buffer.from([0xef, 0xbb, 0xbf]);

/** The head as text good enough for header names and JSON keys (ASCII in every format we know). */
function headText(head: Buffer): string {
  if (head[0] === 0xff && head[1] === 0xfe) return head.subarray(2).toString('utf16le');
  if (head[0] === 0xfe && head[1] === 0xff) return Buffer.from(head.subarray(2)).swap16().toString('utf16le');
  const body = head.subarray(0, 3).equals(utf8Bom) ? head.subarray(3) : head;
  return body.toString('latin1');
}

const delimiters = [',', ';', '\t', '|'] as const;

/** The delimiter seen most often outside quotes in a header line; a comma when there is none. */
export function guessDelimiter(line: string): string {
  const counts = new Map<string, number>();
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (delimiters as readonly string[]).includes(ch)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  }
  let best = ',';
  let bestCount = 0;
  for (const d of delimiters) {
    const n = counts.get(d) ?? 0;
    if (n > bestCount) [best, bestCount] = [d, n];
  }
  return best;
}

function firstLine(head: Buffer): string {
  const text = headText(head);
  const end = text.search(/\r\n|\n|\r/);
  return end < 0 ? text : text.slice(0, end);
}

/** The delimiter of a CSV file, from its header line. */
export const csvDelimiter = (head: Buffer): string => guessDelimiter(firstLine(head));

/** Header names of a CSV head, trimmed; empty when the head is not CSV-like text. */
export function csvHeader(head: Buffer): string[] {
  const line = firstLine(head);
  if (line.length === 0 || /[\u0000-\u0008\u000e-\u001f]/.test(line)) return [];
  try {
    const [row] = parseSync(line, { delimiter: guessDelimiter(line), relax_quotes: true }) as string[][];
    return (row ?? []).map((h) => h.trim());
  } catch {
    return [];
  }
}

/** The first non-empty line of an NDJSON head parsed as an object, or undefined. */
export function firstJsonObject(head: Buffer): JsonObject | undefined {
  for (const line of headText(head).split(/\r?\n/)) {
    if (line.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** True when every name is in the header (exact spelling, as the source writes it). */
export const hasColumns = (header: string[], names: string[]): boolean => names.every((n) => header.includes(n));

// ---------------------------------------------------------------------------------------------------------
// Streaming rows.

/**
 * Streams CSV rows keyed by header. Rows whose column count differs from the header's, and rows csv-parse
 * cannot read (a stray quote), are reported as `bad row` results and the import goes on.
 */
export async function* csvRows(text: TextSource['text'], delimiter: string): AsyncGenerator<RowResult<CsvRow> | { header: string[] }> {
  let badRows = 0;
  const parser = parse({
    bom: true,
    delimiter,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
  });
  parser.on('skip', () => badRows++);
  const records = pipeline(text, parser, () => {});
  let header: string[] | undefined;
  for await (const raw of records as AsyncIterable<string[]>) {
    for (; badRows > 0; badRows--) yield { ok: false, reason: 'bad row' };
    if (!header) {
      header = raw.map((h) => h.trim());
      yield { header };
      continue;
    }
    if (raw.length !== header.length) {
      // Extra cells that are all empty (a trailing delimiter) are harmless; anything else is misaligned.
      if (raw.slice(header.length).some((v) => v.trim() !== '') || raw.length < header.length) {
        yield { ok: false, reason: 'bad row: column count' };
        continue;
      }
    }
    const row: CsvRow = {};
    header.forEach((h, i) => {
      if (!(h in row)) row[h] = raw[i] ?? '';
    });
    yield { ok: true, row };
  }
  for (; badRows > 0; badRows--) yield { ok: false, reason: 'bad row' };
}

/** Streams NDJSON objects; a line that is not a JSON object is a `bad json` result. Blank lines are ignored. */
export async function* ndjsonRows(text: TextSource['text']): AsyncGenerator<RowResult<JsonObject>> {
  let rest = '';
  const parseLine = (line: string): RowResult<JsonObject> | undefined => {
    if (line.trim() === '') return undefined;
    try {
      const value: unknown = JSON.parse(line);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return { ok: true, row: value as JsonObject };
    } catch {
      // reported below
    }
    return { ok: false, reason: 'bad json' };
  };
  for await (const chunk of text as AsyncIterable<string>) {
    rest += chunk;
    let start = 0;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n', start)) {
      const r = parseLine(rest.slice(start, nl));
      start = nl + 1;
      if (r) yield r;
    }
    rest = rest.slice(start);
  }
  const last = parseLine(rest);
  if (last) yield last;
}

// ---------------------------------------------------------------------------------------------------------
// Readers built from a row stream and a mapping.

interface RowReaderSpec<T> {
  path: string;
  options: OpenOptions;
  format: string;
  /** Default source name; `options.source` overrides it. */
  source: string;
  map: (row: T) => ReadResult;
}

/**
 * Wraps a row stream as a SourceReader: rows without an id or a name are skipped, and so is a second row with
 * an id already seen in the file (the first wins), which keeps a re-import of the same file idempotent.
 */
function rowReader<T>(
  spec: RowReaderSpec<T>,
  text: TextSource,
  rows: AsyncIterable<RowResult<T>>,
): SourceReader & { readonly encoding: string } {
  const seen = new Set<string>();
  return {
    source: spec.options.source ?? spec.source,
    publisher: spec.source,
    format: spec.format,
    totalBytes: text.totalBytes,
    encoding: text.encoding,
    bytesRead: text.bytesRead,
    async *records(): AsyncIterable<ReadResult> {
      for await (const r of rows) {
        if (!r.ok) {
          yield r;
          continue;
        }
        const mapped = spec.map(r.row);
        if (!mapped.ok) {
          yield mapped;
          continue;
        }
        const { sourceId, name } = mapped.place;
        if (!sourceId) yield { ok: false, reason: 'no id' };
        else if (!name || name.trim() === '') yield { ok: false, reason: 'no name' };
        else if (seen.has(sourceId)) yield { ok: false, reason: 'duplicate id' };
        else {
          seen.add(sourceId);
          yield mapped;
        }
      }
    },
  };
}

/** A CSV reader: `prepare` sees the header first and returns the row mapping (or throws for a bad mapping). */
export async function openCsvReader(
  spec: Omit<RowReaderSpec<CsvRow>, 'map'> & { prepare: (header: string[]) => (row: CsvRow) => ReadResult },
): Promise<SourceReader & { readonly encoding: string }> {
  const text = await openTextSource(spec.path, spec.options.encoding);
  const stream = csvRows(text.text, csvDelimiter(text.sample));
  const first = await stream.next();
  if (first.done || !('header' in first.value)) {
    text.text.destroy();
    throw new AppError('validation_failed', `${spec.path} has no header row`, {
      errors: [{ field: 'file', message: 'no CSV header row' }],
    });
  }
  let map: (row: CsvRow) => ReadResult;
  try {
    map = spec.prepare(first.value.header);
  } catch (error) {
    text.text.destroy();
    throw error;
  }
  async function* body(): AsyncIterable<RowResult<CsvRow>> {
    for await (const r of stream) if (!('header' in r)) yield r;
  }
  return rowReader({ ...spec, map }, text, body());
}

/** An NDJSON reader: `prepare` sees the first object of the file (when it parses) and returns the mapping. */
export async function openNdjsonReader(
  spec: Omit<RowReaderSpec<JsonObject>, 'map'> & { prepare: (first: JsonObject | undefined) => (row: JsonObject) => ReadResult },
): Promise<SourceReader & { readonly encoding: string }> {
  const text = await openTextSource(spec.path, spec.options.encoding);
  let map: (row: JsonObject) => ReadResult;
  try {
    map = spec.prepare(firstJsonObject(text.sample));
  } catch (error) {
    text.text.destroy();
    throw error;
  }
  return rowReader({ ...spec, map }, text, ndjsonRows(text.text));
}

/** Specific formats have their own mapping; an explicit column mapping is for the generic ones. */
export function refuseColumns(options: OpenOptions, format: string): void {
  if (options.columns && Object.keys(options.columns).length > 0) {
    throw new AppError('validation_failed', `--columns applies to the generic csv and ndjson formats, not ${format}`, {
      errors: [{ field: 'columns', message: `not used by ${format}; pass --format csv or --format ndjson`, allowed: ['csv', 'ndjson'] }],
    });
  }
}
