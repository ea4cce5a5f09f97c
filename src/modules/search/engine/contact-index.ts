import { placeContactKeys } from '../contact-keys.ts';
import type { PlaceFacts } from './engine.repository.ts';
import { type FactColumns, FactsRow, numbersOf } from './fact-columns.ts';

/** A place that carries a key, with what narrows an address (`contact-lookup.ts`). */
export interface ContactHit {
  id: number;
  key: string;
  cityId: number | null;
  city: string | null;
  postcode: string | null;
}

/** A carrier's city id when it has none (city ids are positive). */
const NO_CITY = -1;

/**
 * The contact postings of the in-memory index: key (`contact-keys.ts`) → the open places that carry it, and
 * each such place's keys, so that a change replaces exactly what the place carried. Built with the bitmap index
 * from the same facts and kept current with it from the change log (`MemorySearchEngine`), so a lookup is a
 * few hash probes and reads nothing. What a hit shows of its place (city id, city, postcode) is held by place id
 * in typed arrays, the texts as codes into one dictionary: no object a place.
 */
export class ContactIndex {
  private readonly byKey = new Map<string, number | number[]>();
  /** The keys each carrier carries (one key: the key itself); a place absent carries none. */
  private readonly keysOf = new Map<number, string | string[]>();
  private cityIdOf = new Int32Array(0);
  /** Codes into `texts` (-1: none). */
  private cityOf = new Int32Array(0);
  private postcodeOf = new Int32Array(0);
  private readonly texts: string[] = [];
  private readonly textCodes = new Map<string, number>();

  static build(batches: readonly PlaceFacts[][]): ContactIndex {
    const index = new ContactIndex();
    for (const batch of batches) for (const facts of batch) index.add(facts);
    return index;
  }

  /** The postings of every place's facts by column, read through one reused object (`FactsRow`). */
  static fromColumns(facts: FactColumns): ContactIndex {
    const index = new ContactIndex();
    if (facts.size === 0) return index;
    index.grow(numbersOf(facts, 'id').reduce((m, id) => Math.max(m, id), 0) + 1, true);
    const row = new FactsRow(facts);
    for (let i = 0; i < facts.size; i++) index.add(row.at(i));
    return index;
  }

  get size(): number {
    return this.byKey.size;
  }

  /** The places of each key, in the order of the keys, each place once. */
  lookup(keys: readonly string[]): ContactHit[] {
    const out: ContactHit[] = [];
    const seen = new Set<number>();
    for (const key of keys) {
      const ids = this.byKey.get(key);
      if (ids === undefined) continue;
      for (const id of typeof ids === 'number' ? [ids] : ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        const cityId = this.cityIdOf[id]!;
        out.push({
          id,
          key,
          cityId: cityId === NO_CITY ? null : cityId,
          city: this.textOf(this.cityOf[id]!),
          postcode: this.textOf(this.postcodeOf[id]!),
        });
      }
    }
    return out;
  }

  /** Applies the current facts of changed places: `ids` every place changed, `facts` those that still exist. */
  apply(ids: readonly number[], facts: readonly PlaceFacts[]): void {
    for (const id of ids) this.remove(id);
    for (const f of facts) this.add(f);
  }

  private add(facts: PlaceFacts): void {
    // Searches show open places only; a closed or merged record is not found by its contacts either.
    if (facts.open !== 1 || facts.visible !== 1) return;
    const keys = placeContactKeys(facts);
    if (keys.length === 0) return;
    const id = facts.id;
    if (id >= this.cityIdOf.length) this.grow(id + 1);
    this.keysOf.set(id, keys.length === 1 ? keys[0]! : keys);
    this.cityIdOf[id] = facts.city_id ?? NO_CITY;
    this.cityOf[id] = this.codeOf(facts.city);
    this.postcodeOf[id] = this.codeOf(facts.postcode);
    for (const key of keys) {
      const ids = this.byKey.get(key);
      if (ids === undefined) this.byKey.set(key, facts.id);
      else if (typeof ids === 'number') this.byKey.set(key, [ids, facts.id]);
      else ids.push(facts.id);
    }
  }

  private remove(id: number): void {
    const carried = this.keysOf.get(id);
    if (carried === undefined) return;
    this.keysOf.delete(id);
    for (const key of typeof carried === 'string' ? [carried] : carried) {
      const ids = this.byKey.get(key);
      if (ids === undefined) continue;
      if (typeof ids === 'number') {
        if (ids === id) this.byKey.delete(key);
        continue;
      }
      const rest = ids.filter((i) => i !== id);
      this.byKey.set(key, rest.length === 1 ? rest[0]! : rest);
    }
  }

  private textOf(code: number): string | null {
    return code === -1 ? null : this.texts[code]!;
  }

  /** A city's or postcode's code in `texts` (-1: none); a text once seen keeps its code. */
  private codeOf(text: string | null): number {
    if (text === null) return -1;
    let code = this.textCodes.get(text);
    if (code === undefined) this.textCodes.set(text, (code = this.texts.push(text) - 1));
    return code;
  }

  /** Room for place ids below `ids` (exactly, when the build knows them; else with slack for the next ones). */
  private grow(ids: number, exact = false): void {
    const capacity = exact ? ids : Math.max(ids, Math.ceil(this.cityIdOf.length * 1.5), 1024);
    const grown = (a: Int32Array) => {
      const next = new Int32Array(capacity);
      next.set(a);
      return next;
    };
    this.cityIdOf = grown(this.cityIdOf);
    this.cityOf = grown(this.cityOf);
    this.postcodeOf = grown(this.postcodeOf);
  }
}
