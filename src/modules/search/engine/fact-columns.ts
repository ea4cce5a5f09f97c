import type { PlaceFacts } from './engine.repository.ts';

/**
 * Every place's facts by column: what the index is built from, whichever the source (a build from the database
 * turns its rows into columns; a snapshot holds them as they are, `index-snapshot.ts`). A column of numbers is a
 * typed array in the narrowest of u8, i32 and f64 that holds every value, with a null mask when it has nulls; a
 * column of text is an i32 code a place (-1: null) into a dictionary. A million places are then a few dozen
 * arrays, not a million objects: a load allocates no object per place and leaves the garbage collector nothing
 * to trace.
 */
export type FactColumn =
  | { kind: 'u8'; values: Uint8Array; nulls: Uint8Array | null }
  | { kind: 'i32'; values: Int32Array; nulls: Uint8Array | null }
  | { kind: 'f64'; values: Float64Array; nulls: Uint8Array | null }
  | { kind: 'text'; codes: Int32Array; dictionary: readonly string[] };

export interface FactColumns {
  /** Places (rows). */
  size: number;
  /** The columns in the facts query's order (`factsShape`). */
  names: readonly string[];
  columns: ReadonlyMap<string, FactColumn>;
}

/** The columns of `facts` (every row with the same fields, `names` first the order of a row's keys). */
export function columnsOf(facts: readonly PlaceFacts[][] | readonly PlaceFacts[], names?: readonly string[]): FactColumns {
  const rows = (facts.length > 0 && Array.isArray(facts[0]) ? (facts as PlaceFacts[][]).flat() : facts) as unknown as ReadonlyArray<
    Record<string, unknown>
  >;
  const order = names ?? (rows.length > 0 ? Object.keys(rows[0]!) : []);
  return { size: rows.length, names: order, columns: new Map(order.map((name) => [name, columnOf(name, rows)])) };
}

function columnOf(name: string, rows: ReadonlyArray<Record<string, unknown>>): FactColumn {
  let text = false;
  let nulls = false;
  let u8 = true;
  let i32 = true;
  for (const row of rows) {
    const v = row[name];
    if (v === null || v === undefined) nulls = true;
    else if (typeof v === 'string') text = true;
    else if (typeof v === 'number') {
      if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647) u8 = i32 = false;
      else if (v < 0 || v > 255) u8 = false;
    } else throw new Error(`facts: column ${name} holds a ${typeof v}`);
  }
  const n = rows.length;
  if (text) {
    const codes = new Int32Array(n);
    const dictionary: string[] = [];
    const codeOf = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const v = rows[i]![name];
      if (v === null || v === undefined) {
        codes[i] = -1;
        continue;
      }
      if (typeof v !== 'string') throw new Error(`facts: column ${name} mixes text and numbers`);
      let code = codeOf.get(v);
      if (code === undefined) codeOf.set(v, (code = dictionary.push(v) - 1));
      codes[i] = code;
    }
    return { kind: 'text', codes, dictionary };
  }
  const mask = nulls ? new Uint8Array(n) : null;
  const fill = <T extends Uint8Array | Int32Array | Float64Array>(values: T): T => {
    for (let i = 0; i < n; i++) {
      const v = rows[i]![name];
      if (typeof v === 'number') values[i] = v;
      else mask![i] = 1;
    }
    return values;
  };
  if (u8) return { kind: 'u8', values: fill(new Uint8Array(n)), nulls: mask };
  if (i32) return { kind: 'i32', values: fill(new Int32Array(n)), nulls: mask };
  return { kind: 'f64', values: fill(new Float64Array(n)), nulls: mask };
}

/** A number column's values as doubles (NaN: null), for the build's sort. */
export function numbersOf(columns: FactColumns, name: string): Float64Array {
  const column = columns.columns.get(name);
  const out = new Float64Array(columns.size);
  if (!column || column.kind === 'text') throw new Error(`facts: ${name} is not a column of numbers`);
  for (let i = 0; i < out.length; i++) out[i] = column.nulls?.[i] === 1 ? Number.NaN : column.values[i]!;
  return out;
}

/**
 * The rows in the index's default order (`review_key` descending, then the place id descending): the slots of
 * the build, and the largest place id.
 */
export function defaultOrder(facts: FactColumns): { order: Uint32Array; maxId: number } {
  const order = new Uint32Array(facts.size);
  let maxId = 0;
  if (facts.size === 0) return { order, maxId };
  const keys = numbersOf(facts, 'review_key');
  const ids = numbersOf(facts, 'id');
  for (let i = 0; i < facts.size; i++) {
    order[i] = i;
    if (ids[i]! > maxId) maxId = ids[i]!;
  }
  order.sort((a, b) => keys[b]! - keys[a]! || ids[b]! - ids[a]!);
  return { order, maxId };
}

/** A text column's value of every row (null: none), for the text index's documents and the like. */
export function textAt(columns: FactColumns, name: string): (row: number) => string | null {
  const column = columns.columns.get(name);
  if (!column) throw new Error(`facts: no column ${name}`);
  if (column.kind !== 'text') return () => null;
  const { codes, dictionary } = column;
  return (row) => (codes[row] === -1 ? null : dictionary[codes[row]!]!);
}

/**
 * One place's facts read from the columns into a single object that `at` rewrites for every row: the build reads
 * each place's facts once and keeps none of the object (its strings are the dictionaries' own), so a million
 * places cost one object. A caller that keeps a row copies it (`{ ...row.at(i) }`).
 */
export class FactsRow {
  private readonly readers: Array<(row: Record<string, unknown>, i: number) => void>;
  private readonly row: Record<string, unknown> = {};

  constructor(columns: FactColumns) {
    this.readers = columns.names.map((name) => {
      const column = columns.columns.get(name)!;
      this.row[name] = null;
      if (column.kind === 'text') {
        const { codes, dictionary } = column;
        return (row, i) => {
          const code = codes[i]!;
          row[name] = code === -1 ? null : dictionary[code];
        };
      }
      const { values, nulls } = column;
      if (!nulls) return (row, i) => void (row[name] = values[i]);
      return (row, i) => void (row[name] = nulls[i] === 1 ? null : values[i]);
    });
  }

  /** Row `i`'s facts, valid until the next call. */
  at(i: number): PlaceFacts {
    for (const read of this.readers) read(this.row, i);
    return this.row as unknown as PlaceFacts;
  }
}
