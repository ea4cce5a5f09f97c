import { basename } from 'node:path';
import { SaxesParser } from 'saxes';
import { AppError } from '../../../infra/errors.ts';
import { openTextSource } from './text-source.ts';

/** What happened to an object in an OpenStreetMap change file. */
export type ChangeAction = 'create' | 'modify' | 'delete';

export interface ChangedNode {
  action: ChangeAction;
  version: number;
  /** Absent on a deletion that carries no details. */
  lat?: number;
  lon?: number;
  tags: Record<string, string>;
}

export interface ChangedWay {
  action: ChangeAction;
  version: number;
  refs: number[];
  tags: Record<string, string>;
}

export interface ChangedRelation {
  action: ChangeAction;
  version: number;
  members: Array<{ type: 'node' | 'way' | 'relation'; ref: number; role: string }>;
  tags: Record<string, string>;
}

/** Every object of a change file, its last version only (a file of merged diffs may hold several). */
export interface OsmChange {
  nodes: Map<number, ChangedNode>;
  ways: Map<number, ChangedWay>;
  relations: Map<number, ChangedRelation>;
}

/** A file whose first bytes (decompressed) open an `<osmChange>` document. */
export function looksLikeOsmChange(path: string, head: Buffer): boolean {
  if (/\.osc(\.gz)?$/i.test(path)) return true;
  return /^(\uFEFF)?\s*(<\?xml[^>]*\?>\s*)?(<!--[\s\S]*?-->\s*)*<osmChange[\s>]/.test(head.subarray(0, 4096).toString('utf8'));
}

/**
 * Reads an OpenStreetMap change file (osmChange XML, https://wiki.openstreetmap.org/wiki/OsmChange), plain
 * or gzip, streamed through a SAX parser. Everything it holds is kept in memory: change files are the
 * changes of a day or a minute (a daily diff of a large country is tens of MB of XML); a planet-wide diff
 * is cut to the region first (`osmium extract`).
 */
export async function readOsmChange(path: string): Promise<OsmChange> {
  const change: OsmChange = { nodes: new Map(), ways: new Map(), relations: new Map() };
  const parser = new SaxesParser({ fileName: basename(path) });
  let action: ChangeAction | undefined;
  let sawRoot = false;
  let current: { kind: 'node' | 'way' | 'relation'; id: number; object: ChangedNode | ChangedWay | ChangedRelation } | undefined;

  const fail = (why: string): never => {
    throw new AppError('validation_failed', `${basename(path)} is not a readable OpenStreetMap change file (${why})`, {
      errors: [{ field: 'file', message: `broken osmChange XML: ${why}` }],
    });
  };
  const integer = (value: string | undefined, what: string): number => {
    const n = Number(value);
    if (value === undefined || !Number.isSafeInteger(n)) fail(`${what} ${JSON.stringify(value)} is not a whole number`);
    return n;
  };
  const coordinate = (value: string | undefined, what: string, limit: number): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isFinite(n) || Math.abs(n) > limit) fail(`${what} ${JSON.stringify(value)} is not a coordinate`);
    return n;
  };

  parser.on('opentag', (tag) => {
    const a = tag.attributes as Record<string, string>;
    switch (tag.name) {
      case 'osmChange':
        sawRoot = true;
        break;
      case 'create':
      case 'modify':
      case 'delete':
        if (!sawRoot) fail(`<${tag.name}> outside <osmChange>`);
        action = tag.name;
        break;
      case 'node':
      case 'way':
      case 'relation': {
        if (!action) fail(`<${tag.name}> outside <create>, <modify> or <delete>`);
        const id = integer(a.id, `${tag.name} id`);
        const version = a.version === undefined ? 0 : integer(a.version, `${tag.name} version`);
        const base = { action: action!, version, tags: {} as Record<string, string> };
        if (tag.name === 'node') {
          const lat = coordinate(a.lat, 'lat', 90);
          const lon = coordinate(a.lon, 'lon', 180);
          if (action !== 'delete' && (lat === undefined || lon === undefined)) fail(`node ${id} has no lat/lon`);
          current = { kind: 'node', id, object: { ...base, ...(lat !== undefined && lon !== undefined ? { lat, lon } : {}) } };
        } else if (tag.name === 'way') current = { kind: 'way', id, object: { ...base, refs: [] } };
        else current = { kind: 'relation', id, object: { ...base, members: [] } };
        break;
      }
      case 'tag':
        if (current && a.k !== undefined) current.object.tags[a.k] = a.v ?? '';
        break;
      case 'nd':
        if (current?.kind === 'way') (current.object as ChangedWay).refs.push(integer(a.ref, 'nd ref'));
        break;
      case 'member':
        if (current?.kind === 'relation') {
          const type = a.type;
          if (type !== 'node' && type !== 'way' && type !== 'relation') fail(`member type ${JSON.stringify(type)}`);
          (current.object as ChangedRelation).members.push({
            type: type as 'node' | 'way' | 'relation',
            ref: integer(a.ref, 'member ref'),
            role: a.role ?? '',
          });
        }
        break;
      default:
        break;
    }
  });
  parser.on('closetag', (tag) => {
    if ((tag.name === 'node' || tag.name === 'way' || tag.name === 'relation') && current) {
      const into = (current.kind === 'node' ? change.nodes : current.kind === 'way' ? change.ways : change.relations) as Map<
        number,
        { version: number }
      >;
      const before = into.get(current.id);
      // The later of two versions wins; at equal versions (no version attributes) the later in the file.
      if (!before || current.object.version >= before.version) into.set(current.id, current.object);
      current = undefined;
    } else if (tag.name === 'create' || tag.name === 'modify' || tag.name === 'delete') {
      action = undefined;
    }
  });

  // OsmChange is UTF-8 XML; gzip or plain. Each chunk is whole characters (decoded, then re-encoded).
  const { text } = await openTextSource(path, 'utf-8');
  try {
    for await (const piece of text as AsyncIterable<Buffer | string>) parser.write(piece.toString());
    parser.close();
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (error instanceof Error && 'syscall' in error) throw error;
    fail(error instanceof Error ? error.message : String(error));
  }
  if (!sawRoot) fail('no <osmChange> element');
  return change;
}
