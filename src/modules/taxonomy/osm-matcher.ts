import { CATEGORY_KEYS, type MatchPattern, type Taxonomy } from './taxonomy.build.ts';

/**
 * Matches OSM tags against the presets the way iD's presetIndex.match does: every preset tag must be present
 * (`key=*` presets accept any value, at half score), each matching tag adds the preset's matchScore, matching
 * addTags add a bonus, unsearchable presets lose a hair (×0.999); the highest score wins.
 * Ties go to the key first in CATEGORY_KEYS, then the preset id, so the result never depends on tag order.
 * Geometry and locationSet are not known for imported places and are ignored.
 * When nothing but a generic preset (`shop=*`) matches, the tags are tried again with deprecated tags upgraded
 * (`amenity=gym` → `leisure=fitness_centre`, deprecated.json) and multi-values cut to their first value
 * (`shop=hairdresser;beauty` → `shop=hairdresser`), which iD leaves to its validator.
 */
export interface OsmMatcher {
  /** Category slugs, best first: the best preset overall, then the best of each other OSM key present (`amenity=cafe` + `shop=bakery`). */
  match(tags: Record<string, string>): string[];
}

interface Candidate {
  pattern: MatchPattern;
  tagEntries: Array<[string, string]>;
  addEntries: Array<[string, string]>;
  /** The preset's OSM key (`amenity` for `amenity/restaurant/italian`). */
  key: string;
  /** Tie-break: position of the key in CATEGORY_KEYS, then the preset id. */
  rank: number;
  generic: boolean;
}

/** Presets indexed under one tag, grouped by the key of another tag they need (`''`: none). */
interface Bucket {
  needs: Map<string, Candidate[]>;
}

function score(c: Candidate, tags: Record<string, string>): number {
  const base = c.pattern.score;
  let s = 0;
  for (const [k, v] of c.tagEntries) {
    const value = tags[k];
    if (value === v) s += base;
    else if (v === '*' && value !== undefined && value !== 'no') s += base / 2;
    else return -1;
  }
  for (const [k, v] of c.addEntries) if (tags[k] === v) s += base;
  return c.pattern.searchable ? s : s * 0.999;
}

export function createOsmMatcher({ patterns: all, upgrades }: Pick<Taxonomy, 'patterns' | 'upgrades'>): OsmMatcher {
  const patterns = all.filter((p) => p.osm);
  const keyRank = (key: string) => (CATEGORY_KEYS as readonly string[]).indexOf(key);
  const ordered = [...patterns].sort(
    (a, b) => keyRank(a.presetId.split('/')[0]!) - keyRank(b.presetId.split('/')[0]!) || (a.presetId < b.presetId ? -1 : 1),
  );
  const rankOf = new Map(ordered.map((p, i) => [p, i]));
  // Indexed by the preset's first exact tag (`amenity` → `restaurant`), or under `*` when it only has wildcards.
  const byKey = new Map<string, Map<string, Bucket>>();
  for (const pattern of patterns) {
    const tagEntries = Object.entries(pattern.tags);
    const exact = tagEntries.find(([, v]) => v !== '*');
    const c: Candidate = {
      pattern,
      tagEntries,
      addEntries: Object.entries(pattern.addTags).filter(([k]) => !(k in pattern.tags)),
      key: pattern.presetId.split('/')[0]!,
      rank: rankOf.get(pattern)!,
      generic: !exact,
    };
    const [k, v] = exact ?? [tagEntries[0]![0], '*'];
    let values = byKey.get(k);
    if (!values) byKey.set(k, (values = new Map()));
    let bucket = values.get(v);
    if (!bucket) values.set(v, (bucket = { needs: new Map() }));
    // Grouped by a second tag's key, so that 25 `amenity=restaurant` + `cuisine=…` presets cost one lookup of `cuisine`.
    const other = tagEntries.find(([key]) => key !== k)?.[0] ?? '';
    const group = bucket.needs.get(other);
    if (group) group.push(c);
    else bucket.needs.set(other, [c]);
  }

  const run = (tags: Record<string, string>): MatchState => {
    const state: MatchState = { best: undefined, bestScore: 0, perKey: undefined };
    for (const k in tags) {
      const values = byKey.get(k);
      if (values === undefined) continue;
      const exact = values.get(tags[k]!);
      if (exact !== undefined) consider(exact, tags, state);
      const wildcard = values.get('*');
      if (wildcard !== undefined) consider(wildcard, tags, state);
    }
    return state;
  };

  /** The tags with deprecated tags upgraded and multi-values cut, or undefined when that changes nothing. */
  const upgraded = (tags: Record<string, string>): Record<string, string> | undefined => {
    let out: Record<string, string> | undefined;
    for (const k in tags) {
      const v = tags[k]!;
      const first = v.includes(';') ? v.slice(0, v.indexOf(';')).trim() : v;
      const replace = upgrades[`${k}=${first}`];
      if (first === v && !replace) continue;
      out ??= { ...tags };
      if (replace) {
        delete out[k];
        Object.assign(out, replace);
      } else out[k] = first;
    }
    return out;
  };

  // Called for every OSM place of an import: plain loops, no closures created per call.
  return {
    match(tags) {
      let state = run(tags);
      if (state.best === undefined || state.best.generic) {
        const retry = upgraded(tags);
        if (retry) {
          const again = run(retry);
          if (again.best !== undefined && (state.best === undefined || !again.best.generic)) state = again;
        }
      }
      const { best, perKey } = state;
      if (best === undefined) return [];
      const primary = best.pattern.slug;
      if (perKey === undefined || perKey.length < 2) return [primary];
      const out = [primary];
      for (const { c } of perKey.sort((a, b) => b.s - a.s || a.c.rank - b.c.rank))
        if (!out.includes(c.pattern.slug)) out.push(c.pattern.slug);
      return out;
    },
  };
}

interface MatchState {
  best: Candidate | undefined;
  bestScore: number;
  /** The best non-generic candidate per OSM key, for secondary categories. */
  perKey: Array<{ c: Candidate; s: number }> | undefined;
}

function consider(bucket: Bucket, tags: Record<string, string>, state: MatchState): void {
  for (const [needed, list] of bucket.needs) {
    if (needed !== '' && tags[needed] === undefined) continue;
    for (let i = 0; i < list.length; i++) {
      const c = list[i]!;
      const s = score(c, tags);
      if (s <= 0) continue;
      if (s > state.bestScore || (s === state.bestScore && c.rank < state.best!.rank)) {
        state.best = c;
        state.bestScore = s;
      }
      if (c.generic) continue;
      const perKey = (state.perKey ??= []);
      let at = 0;
      while (at < perKey.length && perKey[at]!.c.key !== c.key) at++;
      if (at === perKey.length) perKey.push({ c, s });
      else if (s > perKey[at]!.s || (s === perKey[at]!.s && c.rank < perKey[at]!.c.rank)) perKey[at] = { c, s };
    }
  }
}
