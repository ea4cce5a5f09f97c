/**
 * A map that holds at most `capacity` entries and drops the least recently used one first (reading or
 * writing an entry makes it the most recent). The one LRU of the code base: each cache is an instance owned by
 * the object whose lifetime it shares, never a module's.
 */
export class Lru<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** The entry, made the most recent. */
  get(key: K): V | undefined {
    if (!this.entries.has(key)) return undefined;
    const value = this.entries.get(key) as V;
    // Map keeps insertion order: the first key is the least recently used.
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** Sets the entry as the most recent; past the capacity, the least recently used goes (a capacity of 0 keeps nothing). */
  set(key: K, value: V): void {
    this.entries.delete(key);
    if (this.capacity <= 0) return;
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, value);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  /** The value of `key`, computed and remembered when missing. */
  getOrSet(key: K, compute: () => V): V {
    if (this.entries.has(key)) return this.get(key) as V;
    const value = compute();
    this.set(key, value);
    return value;
  }
}
