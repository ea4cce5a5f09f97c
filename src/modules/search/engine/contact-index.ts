import { placeContactKeys } from '../contact-keys.ts';
import type { PlaceFacts } from './engine.repository.ts';
import { type FactColumns, FactsRow } from './fact-columns.ts';

/** A place that carries a key, with what narrows an address (`contact-lookup.ts`). */
export interface ContactHit {
  id: number;
  key: string;
  cityId: number | null;
  city: string | null;
  postcode: string | null;
}

interface Carrier {
  keys: string[];
  cityId: number | null;
  city: string | null;
  postcode: string | null;
}

/**
 * The contact postings of the in-memory index: key (`contact-keys.ts`) → the open places that carry it, and
 * each such place's keys, so that a change replaces exactly what the place carried. Built with the bitmap index
 * from the same facts and kept current with it from the change log (`MemorySearchEngine`), so a lookup is a
 * few hash probes and reads nothing.
 */
export class ContactIndex {
  private readonly byKey = new Map<string, number | number[]>();
  private readonly carriers = new Map<number, Carrier>();

  static build(batches: readonly PlaceFacts[][]): ContactIndex {
    const index = new ContactIndex();
    for (const batch of batches) for (const facts of batch) index.add(facts);
    return index;
  }

  /** The postings of every place's facts by column, read through one reused object (`FactsRow`). */
  static fromColumns(facts: FactColumns): ContactIndex {
    const index = new ContactIndex();
    if (facts.size === 0) return index;
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
        const c = this.carriers.get(id)!;
        out.push({ id, key, cityId: c.cityId, city: c.city, postcode: c.postcode });
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
    this.carriers.set(facts.id, { keys, cityId: facts.city_id, city: facts.city, postcode: facts.postcode });
    for (const key of keys) {
      const ids = this.byKey.get(key);
      if (ids === undefined) this.byKey.set(key, facts.id);
      else if (typeof ids === 'number') this.byKey.set(key, [ids, facts.id]);
      else ids.push(facts.id);
    }
  }

  private remove(id: number): void {
    const carrier = this.carriers.get(id);
    if (!carrier) return;
    this.carriers.delete(id);
    for (const key of carrier.keys) {
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
}
