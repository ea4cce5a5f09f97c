import { RoaringBitmap32 } from 'roaring-wasm';
import { nameMark, searchForm } from '../../../infra/text.ts';
import { textTiers, wordPhrase } from '../query/criteria.sql.ts';
import { keepFirst, type OrderKey } from './order-keys.ts';

/** A search's text as the index answers it (`IndexQuery.text`). */
export interface IndexText {
  words: string[];
  kind: { categories: string[]; words: string[]; cityId: number | null } | null;
}

/**
 * The names of every place as the SQLite full-text index holds them, in the search engine's slots: each slot's
 * search document (`searchDocument` in infra/text.ts: every name in search form, between `$` marks) and, per
 * trigram of those documents, the bitmap of the slots holding it. This is the FTS5 trigram index's own model,
 * so the answers are SQLite's by construction: a query word is a phrase (`wordPhrase`), a document holds it when
 * the phrase is a substring of the document; the trigrams' intersection lists the candidates and the documents
 * decide (a phrase of three characters is one trigram and needs no check).
 */
export class TextIndex {
  /** Each slot's search document ('' for an empty slot). */
  private docs: string[] = [];
  private readonly byTrigram = new Map<TrigramKey, RoaringBitmap32>();
  private disposed = false;

  /** Fills an empty index from the documents of slots 0…n-1, each trigram's bitmap made in one go per chunk. */
  load(docs: readonly string[]): void {
    this.docs = docs.slice();
    const lists = new Map<TrigramKey, number[]>();
    const flush = () => {
      for (const [key, list] of lists) {
        let bitmap = this.byTrigram.get(key);
        if (!bitmap) this.byTrigram.set(key, (bitmap = new RoaringBitmap32()));
        bitmap.addMany(Uint32Array.from(list));
      }
      lists.clear();
    };
    for (let s = 0; s < docs.length; s++) {
      forEachTrigram(docs[s]!, (key) => {
        let list = lists.get(key);
        if (!list) lists.set(key, (list = []));
        // Slots come in increasing order: a trigram repeated in one document is pushed once.
        if (list[list.length - 1] !== s) list.push(s);
      });
      if ((s & 0x3ffff) === 0x3ffff) flush();
    }
    flush();
    for (const bitmap of this.byTrigram.values()) {
      bitmap.runOptimize();
      bitmap.shrinkToFit();
    }
  }

  /** Gives slot `s` its document (the slot was empty). */
  set(s: number, doc: string): void {
    while (this.docs.length <= s) this.docs.push('');
    this.docs[s] = doc;
    forEachTrigram(doc, (key) => {
      let bitmap = this.byTrigram.get(key);
      if (!bitmap) this.byTrigram.set(key, (bitmap = new RoaringBitmap32()));
      bitmap.add(s);
    });
  }

  /** Empties slot `s` (its place moved to another slot or is gone). */
  remove(s: number): void {
    const doc = this.docs[s];
    if (!doc) return;
    forEachTrigram(doc, (key) => this.byTrigram.get(key)?.delete(s));
    this.docs[s] = '';
  }

  /**
   * The slots of `within` whose documents hold every word (SQL's `containsWords`: each word's `wordPhrase`), as a
   * new bitmap the caller disposes. No word that folds to something: nothing matches, as in SQL.
   */
  matching(words: readonly string[], within: RoaringBitmap32): RoaringBitmap32 {
    const phrases = words.map(wordPhrase).filter((p): p is string => p !== null);
    if (phrases.length === 0) return new RoaringBitmap32();
    const bitmaps: RoaringBitmap32[] = [];
    for (const phrase of phrases) {
      const keys = trigramsOf(phrase);
      for (const key of keys) {
        const bitmap = this.byTrigram.get(key);
        if (!bitmap) return new RoaringBitmap32();
        bitmaps.push(bitmap);
      }
    }
    bitmaps.sort((a, b) => a.size - b.size);
    const result = RoaringBitmap32.and(bitmaps[0]!, within);
    try {
      for (let i = 1; i < bitmaps.length && !result.isEmpty; i++) result.andInPlace(bitmaps[i]!);
      // A phrase longer than one trigram: its trigrams may lie apart in the document, which decides.
      const checked = phrases.filter((p) => [...p].length > 3);
      if (checked.length === 0 || result.isEmpty) return result;
      const docs = this.docs;
      const kept = result.toUint32Array().filter((s) => {
        const doc = docs[s]!;
        for (const p of checked) if (!doc.includes(p)) return false;
        return true;
      });
      result.dispose();
      return RoaringBitmap32.from(kept);
    } catch (error) {
      result.dispose();
      throw error;
    }
  }

  /**
   * The slots of `within` that match a search's text: names holding its words, and with a kind of business, that
   * kind's places (`kindOf`: the bitmaps of its categories and of its city), their names holding its other words:
   * SQL's OR of the two in `whereCriteria`. A new bitmap the caller disposes.
   */
  named(
    text: IndexText,
    within: RoaringBitmap32,
    kindOf: (categories: string[]) => { categories: RoaringBitmap32[]; city: RoaringBitmap32 | null },
  ): RoaringBitmap32 {
    const byName = this.matching(text.words, within);
    if (!text.kind) return byName;
    const bitmaps = kindOf(text.kind.categories);
    const parts = bitmaps.categories.map((b) => RoaringBitmap32.and(within, b));
    let ofKind = RoaringBitmap32.orMany(parts);
    try {
      if (bitmaps.city) ofKind.andInPlace(bitmaps.city);
      if (text.kind.words.length > 0) {
        const worded = this.matching(text.kind.words, ofKind);
        ofKind.dispose();
        ofKind = worded;
      }
      return ofKind.orInPlace(byName);
    } finally {
      for (const part of [...parts, byName]) part.dispose();
    }
  }

  /**
   * The first `limit` matches of `result` strictly after `after` in text relevance (`textTiers`: a whole name,
   * then a display name starting with the first word, then the others; with a kind of business, its places
   * without the words last), ties by place id ascending: SQL's `relevance` with text. Only the slots whose
   * document holds `$ first-word` can be in the first two tiers; the rest is compared by tier and id alone.
   */
  pageByRelevance(
    result: RoaringBitmap32,
    words: readonly string[],
    withKind: boolean,
    placeId: (s: number) => number,
    after: OrderKey | null,
    limit: number,
  ): OrderKey[] {
    const named = withKind ? this.matching(words, result) : result;
    const forms = words.map(searchForm).filter((f) => f !== '');
    const exact = `${nameMark} ${forms.join(' ')} ${nameMark}`;
    const start = `${nameMark} ${forms[0] ?? ''}`;
    const heads = new Map<number, number>();
    const best: OrderKey[] = [];
    try {
      const head = this.matchingPrefixCandidates(start, named);
      for (const s of head) {
        const doc = this.docs[s]!;
        const tier = doc.includes(exact) ? textTiers.exact : doc.startsWith(start) ? textTiers.starts : textTiers.contains;
        if (tier !== textTiers.contains) heads.set(s, tier);
      }
      for (const s of named.toUint32Array()) keepBest(best, { key: heads.get(s) ?? textTiers.contains, id: placeId(s) }, after, limit);
      if (withKind) {
        const kindOnly = RoaringBitmap32.andNot(result, named);
        try {
          for (const s of kindOnly.toUint32Array()) keepBest(best, { key: textTiers.kind, id: placeId(s) }, after, limit);
        } finally {
          kindOnly.dispose();
        }
      }
    } finally {
      if (named !== result) named.dispose();
    }
    return best;
  }

  /** The slots of `within` that may hold `text` (every trigram of it; unchecked): an array of slots. */
  private matchingPrefixCandidates(text: string, within: RoaringBitmap32): Uint32Array {
    const result = within.clone();
    try {
      for (const key of trigramsOf(text)) {
        const bitmap = this.byTrigram.get(key);
        if (!bitmap) return new Uint32Array(0);
        result.andInPlace(bitmap);
        if (result.isEmpty) break;
      }
      return result.toUint32Array();
    } finally {
      result.dispose();
    }
  }

  /** Distinct trigrams held (the bench reports it). */
  get trigrams(): number {
    return this.byTrigram.size;
  }

  /**
   * Bytes held: the bitmaps' serialized size, the documents (one byte a character for Latin-1 text, two
   * otherwise, as V8 stores them, plus a header), the slot array, and a map entry with its bitmap object per trigram.
   */
  bytes(): number {
    let total = this.docs.length * 8;
    for (const doc of this.docs) total += 16 + (latin1.test(doc) ? doc.length : 2 * doc.length);
    for (const bitmap of this.byTrigram.values()) total += bitmap.getSerializationSizeInBytes('croaring') + TRIGRAM_OVERHEAD;
    return total;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const bitmap of this.byTrigram.values()) bitmap.dispose();
    this.byTrigram.clear();
    this.docs = [];
  }
}

/**
 * A trigram as a map key: three code points of the Basic Multilingual Plane packed in one number (48 bits), any
 * other as its text.
 */
type TrigramKey = number | string;

/** Estimated bytes of a map entry, its bitmap's JavaScript object and WebAssembly header, per trigram. */
const TRIGRAM_OVERHEAD = 120;

const latin1 = /^[\0-\xff]*$/;

/** Each trigram (three consecutive code points) of `text`, in order, repeats included. */
function forEachTrigram(text: string, visit: (key: TrigramKey) => void): void {
  let a = -1;
  let b = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.codePointAt(i)!;
    if (c > 0xffff) i++;
    if (a >= 0) visit(keyOf(a, b, c));
    a = b;
    b = c;
  }
}

function keyOf(a: number, b: number, c: number): TrigramKey {
  if (a > 0xffff || b > 0xffff || c > 0xffff) return String.fromCodePoint(a, b, c);
  return a * 0x1_0000_0000 + b * 0x1_0000 + c;
}

/** The distinct trigrams of a phrase (three characters or more). */
function trigramsOf(text: string): TrigramKey[] {
  const keys = new Set<TrigramKey>();
  forEachTrigram(text, (key) => keys.add(key));
  return [...keys];
}

const ahead = (x: OrderKey, y: OrderKey) => x.key < y.key || (x.key === y.key && x.id < y.id);

/** Keeps `best` the first `limit` keys in ascending (key, id) order strictly after `after`. */
function keepBest(best: OrderKey[], k: OrderKey, after: OrderKey | null, limit: number): void {
  if (after && !ahead(after, k)) return;
  keepFirst(best, k, limit, ahead);
}
