import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import type { OpenOptions, ReaderFactory, ReadResult, SourceReader } from '../importer.types.ts';
import { countedFileStream } from './osm-pbf.ts';
import { osmObjectToPlace } from './osm-tags.ts';

const osmId = /^[nwr][1-9][0-9]*$/;

function isTagMap(v: unknown): v is Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const key in v) if (typeof (v as Record<string, unknown>)[key] !== 'string') return false;
  return true;
}

const coordinate = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** One line of the flattened OSM export: `{id:"n60013073", extract, lat, lon, name, category, tags:{…}}`. */
export function osmNdjsonLineToPlace(line: string): ReadResult {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return { ok: false, reason: 'invalid JSON' };
  }
  if (typeof record !== 'object' || record === null) return { ok: false, reason: 'not an object' };
  const { id, tags, lat, lon } = record as Record<string, unknown>;
  if (typeof id !== 'string' || !osmId.test(id)) return { ok: false, reason: 'no OSM id' };
  if (!isTagMap(tags)) return { ok: false, reason: 'no tags' };
  return osmObjectToPlace(id, tags, coordinate(lat), coordinate(lon));
}

/**
 * The lines of a UTF-8 byte stream, a batch per chunk read, split as readline does with `crlfDelay: Infinity`
 * (`\n`, `\r\n` or a lone `\r` ends a line; a last line without an end is kept). One asynchronous step per
 * chunk instead of one per line: the line's consumer runs in a plain loop.
 */
export async function* lineBatches(bytes: AsyncIterable<Buffer | string>): AsyncGenerator<string[]> {
  const decoder = new StringDecoder('utf8');
  /** Adds one line as cut at `\n` (or the end): without the `\r` of a `\r\n`, split at any lone `\r`. */
  const add = (lines: string[], line: string) => {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (!text.includes('\r')) lines.push(text);
    else lines.push(...text.split('\r'));
  };
  let rest = '';
  for await (const chunk of bytes) {
    const text = rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk));
    const lines: string[] = [];
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; start = end + 1, end = text.indexOf('\n', start)) add(lines, text.slice(start, end));
    rest = text.slice(start);
    if (lines.length > 0) yield lines;
  }
  rest += decoder.end();
  if (rest !== '') {
    const lines: string[] = [];
    add(lines, rest);
    yield lines;
  }
}

/** The same places as the `.osm.pbf` reader gives (source `osm`, ids `n…/w…/r…`), from NDJSON, gzip or plain. */
export class OsmNdjsonReader implements SourceReader {
  readonly format = 'osm-ndjson';
  readonly publisher = 'osm';
  private consumed = 0;

  constructor(
    private readonly path: string,
    readonly totalBytes: number,
    readonly source: string,
    private readonly gzip: boolean,
  ) {}

  bytesRead(): number {
    return this.consumed;
  }

  async *records(): AsyncIterable<ReadResult> {
    const file = countedFileStream(this.path, (n) => (this.consumed += n));
    const text: Readable = this.gzip ? pipeline(file, createGunzip(), () => {}) : file;
    for await (const lines of lineBatches(text)) {
      for (const line of lines) {
        if (line.trim() === '') continue;
        yield osmNdjsonLineToPlace(line);
      }
    }
  }
}

/** A first line with an OSM id and a tag map; the other NDJSON formats have neither. */
function looksLikeOsmNdjson(head: Buffer): boolean {
  const text = head.toString('utf8');
  const end = text.indexOf('\n');
  if (end < 0) return false;
  try {
    const first = JSON.parse(text.slice(0, end)) as Record<string, unknown>;
    return typeof first.id === 'string' && osmId.test(first.id) && isTagMap(first.tags);
  } catch {
    return false;
  }
}

export const osmNdjsonReaderFactory: ReaderFactory = {
  format: 'osm-ndjson',
  description: 'OpenStreetMap POIs flattened to NDJSON ({id:"n123", lat, lon, tags:{…}} per line; gzip or plain)',
  detect: (_path, head) => looksLikeOsmNdjson(head),
  async open(path: string, options: OpenOptions) {
    const { size } = await stat(path);
    const handle = createReadStream(path, { start: 0, end: 1 });
    const magic: Buffer[] = [];
    for await (const chunk of handle) magic.push(chunk as Buffer);
    const gzip = Buffer.concat(magic).equals(Buffer.from([0x1f, 0x8b]));
    return new OsmNdjsonReader(path, size, options.source ?? 'osm', gzip);
  },
};
