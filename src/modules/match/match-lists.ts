import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { SaxesParser } from 'saxes';
import yauzl from 'yauzl';
import { AppError } from '../../infra/errors.ts';
import { openTextSource } from '../importers/readers/text-source.ts';

/** The formats a list is uploaded in. */
export const listFormats = ['csv', 'xlsx', 'ndjson'] as const;
export type ListFormat = (typeof listFormats)[number];

/** One data row of a list, in the file's order. */
export interface ListRow {
  /** 1-based among the data rows (the header is row 0). */
  index: number;
  /** CSV and XLSX: the cells in the header's order. */
  cells?: string[];
  /** XLSX: the columns whose cells are numbers (the result writes them back as numbers). */
  numeric?: number[];
  /** NDJSON: the line's object. */
  object?: Record<string, unknown>;
  /** Why the row cannot be read (a line of NDJSON that is not a JSON object). */
  problem?: string;
}

/** A list opened for one pass: its headers, then its rows as they are read. */
export interface OpenedList {
  format: ListFormat;
  headers: string[];
  /** CSV: the delimiter of the file, which the result keeps. */
  delimiter: string;
  rows: AsyncIterable<ListRow>;
}

/** The value of a header in a row, trimmed; undefined when empty or absent. */
export function cellOf(list: Pick<OpenedList, 'headers'>, row: ListRow, header: string): string | undefined {
  let raw: unknown;
  if (row.cells) {
    const i = list.headers.indexOf(header);
    raw = i < 0 ? undefined : row.cells[i];
  } else raw = row.object?.[header];
  if (raw === undefined || raw === null) return undefined;
  const text = (typeof raw === 'object' ? JSON.stringify(raw) : String(raw)).trim();
  return text === '' ? undefined : text;
}

/** The format of an upload from its name or its first bytes (`PK` is a zip, so a workbook). */
export function listFormatOf(fileName: string, head: Buffer): ListFormat | undefined {
  const ext = /\.([a-z]+)$/i.exec(fileName)?.[1]?.toLowerCase();
  if (ext === 'xlsx' || (head[0] === 0x50 && head[1] === 0x4b)) return 'xlsx';
  if (ext === 'ndjson' || ext === 'jsonl') return 'ndjson';
  if (ext === 'csv' || ext === 'tsv' || ext === 'txt') return 'csv';
  const first = head
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  if (first.startsWith('{')) return 'ndjson';
  return head.length > 0 ? 'csv' : undefined;
}

/** Opens the list at `path` for one pass. A file without a header (an empty one) is refused, naming the field. */
export async function openList(path: string, format: ListFormat): Promise<OpenedList> {
  const opened = format === 'csv' ? await openCsv(path) : format === 'xlsx' ? await openXlsx(path) : await openNdjson(path);
  if (opened.headers.length === 0 || opened.headers.every((h) => h === '')) {
    throw new AppError('validation_failed', 'file: the list has no header row', {
      errors: [{ field: 'file', message: 'has no header row: its first row must name the columns' }],
    });
  }
  return opened;
}

/** The delimiter a CSV header line uses the most, outside quotes: `,`, `;` (Excel in much of Europe) or a tab. */
function delimiterOf(line: string): string {
  const counts = new Map<string, number>([
    [',', 0],
    [';', 0],
    ['\t', 0],
  ]);
  let quoted = false;
  for (const c of line) {
    if (c === '"') quoted = !quoted;
    else if (!quoted && counts.has(c)) counts.set(c, counts.get(c)! + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0]![1] > 0 ? [...counts].sort((a, b) => b[1] - a[1])[0]![0] : ',';
}

async function openCsv(path: string): Promise<OpenedList> {
  const source = await openTextSource(path);
  const sampleText = source.sample.toString('utf8').replace(/^\uFEFF/, '');
  const delimiter = delimiterOf(sampleText.split(/\r?\n/, 1)[0] ?? '');
  const parser = parse({ delimiter, bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true });
  source.text.on('error', (err) => parser.destroy(err));
  source.text.pipe(parser);
  const records = parser[Symbol.asyncIterator]() as AsyncIterator<string[]>;
  const first = await records.next();
  const headers = first.done ? [] : first.value.map((h) => h.trim());
  async function* rows(): AsyncGenerator<ListRow> {
    let index = 0;
    try {
      for (;;) {
        const next = await records.next();
        if (next.done) return;
        yield { index: ++index, cells: next.value };
      }
    } finally {
      source.text.destroy();
      parser.destroy();
    }
  }
  return { format: 'csv', headers, delimiter, rows: rows() };
}

async function openNdjson(path: string): Promise<OpenedList> {
  const source = await openTextSource(path);
  const lines = createInterface({ input: source.text, crlfDelay: Number.POSITIVE_INFINITY })[Symbol.asyncIterator]();
  const parseLine = (line: string, index: number): ListRow => {
    try {
      const value: unknown = JSON.parse(line);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { index, object: value as Record<string, unknown> };
    } catch {
      // Told in the row's reason below.
    }
    return { index, object: {}, problem: 'the line is not a JSON object' };
  };
  const pending: ListRow[] = [];
  let index = 0;
  let headers: string[] = [];
  for (;;) {
    const next = await lines.next();
    if (next.done) break;
    const line = next.value.replace(/^\uFEFF/, '');
    if (line.trim() === '') continue;
    const row = parseLine(line, ++index);
    pending.push(row);
    if (!row.problem) {
      headers = Object.keys(row.object!);
      break;
    }
    if (pending.length >= 1000) break;
  }
  async function* rows(): AsyncGenerator<ListRow> {
    try {
      yield* pending;
      for (;;) {
        const next = await lines.next();
        if (next.done) return;
        if (next.value.trim() === '') continue;
        yield parseLine(next.value, ++index);
      }
    } finally {
      source.text.destroy();
    }
  }
  return { format: 'ndjson', headers, delimiter: ',', rows: rows() };
}

const openZip = (path: string) =>
  new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (err, zip) => (err ? reject(err) : resolve(zip))),
  );

/** The zip's entries by name (the central directory: a few hundred bytes an entry, read once). */
async function zipEntries(zip: yauzl.ZipFile): Promise<Map<string, yauzl.Entry>> {
  const entries = new Map<string, yauzl.Entry>();
  const done = new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.set(entry.fileName, entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve());
    zip.once('error', reject);
  });
  zip.readEntry();
  await done;
  return entries;
}

const entryStream = (zip: yauzl.ZipFile, entry: yauzl.Entry) =>
  new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream))));

/** Streams an XML entry through saxes, handing the caller's handlers each tag; yields what `take` has collected after each chunk. */
async function* xmlEvents<T>(
  stream: Readable,
  on: {
    open?: (tag: { name: string; attributes: Record<string, string> }) => void;
    close?: (name: string) => void;
    text?: (t: string) => void;
  },
  take: () => T[],
): AsyncGenerator<T> {
  const sax = new SaxesParser();
  if (on.open) sax.on('opentag', (tag) => on.open!({ name: tag.name, attributes: tag.attributes as Record<string, string> }));
  if (on.close) sax.on('closetag', (tag) => on.close!(tag.name));
  if (on.text) sax.on('text', on.text);
  stream.setEncoding('utf8');
  for await (const chunk of stream) {
    sax.write(chunk as string);
    yield* take();
  }
  sax.close();
  yield* take();
}

/** `B7` → 1 (the column's 0-based index). */
function columnIndex(ref: string | undefined, fallback: number): number {
  const letters = /^[A-Z]+/.exec(ref ?? '')?.[0];
  if (!letters) return fallback;
  let n = 0;
  for (const c of letters) n = n * 26 + (c.charCodeAt(0) - 64);
  return n - 1;
}

/**
 * A workbook's first sheet, row by row: the zip's central directory says where each part is (the upload is
 * on disk, so the parts are read where they lie), the shared strings are read first (Excel keeps every text
 * cell there: they are held for the pass), then the sheet's XML is streamed through saxes.
 */
async function openXlsx(path: string): Promise<OpenedList> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(path);
  } catch (error) {
    throw new AppError(
      'validation_failed',
      `file: the workbook cannot be opened: ${error instanceof Error ? error.message : String(error)}`,
      {
        errors: [{ field: 'file', message: 'is not a readable XLSX workbook' }],
      },
    );
  }
  const entries = await zipEntries(zip);
  const sheetPath = await firstSheetPath(zip, entries);
  const sheet = sheetPath ? entries.get(sheetPath) : undefined;
  if (!sheet) {
    zip.close();
    throw new AppError('validation_failed', 'file: the workbook has no worksheet', {
      errors: [{ field: 'file', message: 'is not a readable XLSX workbook: it has no worksheet' }],
    });
  }
  const shared: string[] = [];
  const sst = entries.get('xl/sharedStrings.xml');
  if (sst) {
    let inSi = false;
    let inT = false;
    let text = '';
    for await (const _ of xmlEvents(
      await entryStream(zip, sst),
      {
        open: (t) => {
          if (t.name === 'si') {
            inSi = true;
            text = '';
          } else if (t.name === 't' && inSi) inT = true;
        },
        close: (name) => {
          if (name === 't') inT = false;
          else if (name === 'si') {
            inSi = false;
            shared.push(text);
          }
        },
        text: (t) => {
          if (inT) text += t;
        },
      },
      () => [] as never[],
    ));
  }
  const ready: Array<{ cells: string[]; numeric: number[] }> = [];
  let cells: string[] = [];
  let numeric: number[] = [];
  let cell: { col: number; type: string } | undefined;
  let value = '';
  let inValue = false;
  let rowNumber = 0;
  let lastRow = 0;
  const rowsOfSheet = xmlEvents(
    await entryStream(zip, sheet),
    {
      open: (t) => {
        if (t.name === 'row') {
          cells = [];
          numeric = [];
          rowNumber = Number(t.attributes.r) || lastRow + 1;
        } else if (t.name === 'c') {
          cell = { col: columnIndex(t.attributes.r, cells.length), type: t.attributes.t ?? 'n' };
          value = '';
        } else if ((t.name === 'v' || t.name === 't') && cell) inValue = true;
      },
      close: (name) => {
        if (name === 'v' || name === 't') inValue = false;
        else if (name === 'c' && cell) {
          cells[cell.col] =
            cell.type === 's' ? (shared[Number(value)] ?? '') : cell.type === 'b' ? (value === '1' ? 'TRUE' : 'FALSE') : value;
          if (cell.type === 'n' && value !== '') numeric.push(cell.col);
          cell = undefined;
        } else if (name === 'row') {
          // Rows left out of the sheet are empty rows: they are not data.
          lastRow = rowNumber;
          ready.push({ cells: Array.from(cells, (c) => c ?? ''), numeric });
        }
      },
      text: (t) => {
        if (inValue) value += t;
      },
    },
    () => ready.splice(0),
  );
  const first = await rowsOfSheet.next();
  const headers = first.done ? [] : first.value.cells.map((h) => h.trim());
  async function* rows(): AsyncGenerator<ListRow> {
    let index = 0;
    try {
      for await (const r of rowsOfSheet) {
        if (r.cells.every((c) => c.trim() === '')) continue;
        yield { index: ++index, cells: r.cells, ...(r.numeric.length > 0 ? { numeric: r.numeric } : {}) };
      }
    } finally {
      zip.close();
    }
  }
  return { format: 'xlsx', headers, delimiter: ',', rows: rows() };
}

/** The first sheet's part: the workbook's first `<sheet>`, through the workbook's relationships. */
async function firstSheetPath(zip: yauzl.ZipFile, entries: Map<string, yauzl.Entry>): Promise<string | undefined> {
  const wb = entries.get('xl/workbook.xml');
  const rels = entries.get('xl/_rels/workbook.xml.rels');
  if (!wb || !rels) return [...entries.keys()].find((n) => /^xl\/worksheets\/[^/]+\.xml$/.test(n));
  let relId: string | undefined;
  for await (const _ of xmlEvents(
    await entryStream(zip, wb),
    {
      open: (t) => {
        if (t.name === 'sheet' && relId === undefined) relId = t.attributes['r:id'];
      },
    },
    () => [] as never[],
  ));
  let target: string | undefined;
  for await (const _ of xmlEvents(
    await entryStream(zip, rels),
    {
      open: (t) => {
        if (t.name === 'Relationship' && t.attributes.Id === relId) target = t.attributes.Target;
      },
    },
    () => [] as never[],
  ));
  if (!target) return undefined;
  return target.startsWith('/') ? target.slice(1) : `xl/${target}`;
}

/** Reads every row once (at upload): how many data rows the list has. */
export async function countListRows(list: OpenedList): Promise<number> {
  let n = 0;
  for await (const _ of list.rows) n++;
  return n;
}
