import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { foldText } from '../../infra/text.ts';

/**
 * Derives the category taxonomy from the iD tagging presets (@openstreetmap/id-tagging-schema).
 * The rules (which presets, slugs, parents, aliases) are described in this folder's README.md.
 */

/**
 * Bump when the derivation rules change, so `syncTaxonomy` rewrites the tables for the same package version.
 * 2: `category_names.kind` stored (migration 0012).
 * 3: the source-only presets below.
 */
const RULES_REVISION = 3;

/** OSM keys whose presets are places people look for (businesses, services, attractions). */
export const CATEGORY_KEYS = ['amenity', 'shop', 'craft', 'office', 'healthcare', 'education', 'tourism', 'leisure', 'club'] as const;

/**
 * Presets of other keys that are categories for the sources with a closed taxonomy only (Foursquare's
 * apartment buildings and structures, Overture's and Foursquare's airports, factories, residential areas):
 * kinds of place a lead list can want (a property manager's, a supplier's) that the keys above lack. They are
 * not matched on OpenStreetMap tags: `building=*` sits on most shops' and restaurants' ways, and would add a
 * category to nearly every OSM place (`SourceOnly` patterns, skipped by `osm-matcher.ts`).
 */
export const SOURCE_ONLY_PRESETS: readonly string[] = [
  'building',
  'building/apartments',
  'landuse/residential',
  'man_made/works',
  'aeroway/aerodrome',
];

/**
 * When two presets of different keys give the same slug, a key's generic preset (`craft` for `craft=*`) keeps it,
 * else the key listed first keeps the bare slug and the others are prefixed with their key (`leisure/swimming_pool` → `swimming_pool`, `shop/swimming_pool` → `shop_swimming_pool`):
 * amenity/leisure/tourism values name a kind of place, shop/craft/office values a trade, which the prefix reads well with.
 */
const SLUG_PRIORITY: readonly string[] = ['amenity', 'leisure', 'tourism', 'healthcare', 'education', 'shop', 'craft', 'office', 'club'];

export interface TaxonomyCategory {
  slug: string;
  parent: string | null;
  /** iD preset id, e.g. `shop/optician`. */
  presetId: string;
  /** The OSM tags that identify the preset. */
  osmTags: Record<string, string>;
  /** English name. */
  name: string;
}

/** One way an OSM object is recognised as a category: an iD preset (the category's own or one merged into it). */
export interface MatchPattern {
  slug: string;
  presetId: string;
  tags: Record<string, string>;
  addTags: Record<string, string>;
  /** iD `matchScore` (default 1). */
  score: number;
  searchable: boolean;
  /** False for `SOURCE_ONLY_PRESETS`: a category of other sources' tables, never matched on OSM tags. */
  osm: boolean;
}

export interface TaxonomyName {
  /** foldText of `name`. */
  norm: string;
  slug: string;
  lang: string;
  name: string;
  /** True for the category's own preset name in that language; false for aliases, terms and merged presets' names. */
  isName: boolean;
  /** `name`: the category's own name; `alias`: an alias or a merged preset's name; `term`: a search term. */
  kind: 'name' | 'alias' | 'term';
}

export interface Taxonomy {
  /** `@openstreetmap/id-tagging-schema@6.19.2+rules.1`. */
  version: string;
  categories: TaxonomyCategory[];
  patterns: MatchPattern[];
  /** `cuisine` tag values with their English labels (from the preset field), for cuisine-only sources. */
  cuisines: Array<{ value: string; label: string }>;
  /** Deprecated single tags and what replaces them (`amenity=gym` → `leisure=fitness_centre`), from deprecated.json. */
  upgrades: Record<string, Record<string, string>>;
}

interface RawPreset {
  tags: Record<string, string>;
  addTags?: Record<string, string>;
  geometry: string[];
  matchScore?: number;
  searchable?: boolean;
  name?: string;
  locationSet?: unknown;
  replacement?: string;
}

interface RawTranslation {
  name?: string;
  aliases?: string;
  terms?: string;
}

const requireFromHere = createRequire(import.meta.url);

function packageDir(): string {
  return dirname(requireFromHere.resolve('@openstreetmap/id-tagging-schema/package.json'));
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** The version string stored in `reference_data`: package version plus the derivation rules' revision. Cheap. */
export function taxonomyVersion(): string {
  const pkg = readJson<{ name: string; version: string }>(join(packageDir(), 'package.json'));
  return `${pkg.name}@${pkg.version}+rules.${RULES_REVISION}`;
}

const sameTags = (a: Record<string, string>, b: Record<string, string>): boolean => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
};

/** `office/bail_bond_agent-US-PH` → `bail_bond_agent`, `amenity/community_centre/chitalishte_BG` → `community_centre_chitalishte`. */
function baseSlug(presetId: string): string {
  const parts = presetId.split('/');
  if (parts.length === 1) return parts[0]!;
  const last = parts.length - 1;
  parts[last] = parts[last]!.replace(/([-_][A-Z]{2})+$/, '');
  return parts
    .slice(1)
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_');
}

let cached: Taxonomy | undefined;

/** Categories, parents and OSM match patterns from the package (presets and English translation). Cached. */
export function loadTaxonomy(): Taxonomy {
  if (cached) return cached;
  const dir = join(packageDir(), 'dist');
  const presets = readJson<Record<string, RawPreset>>(join(dir, 'presets.min.json'));
  const deprecated = readJson<Array<{ old: Record<string, string>; replace?: Record<string, string> }>>(join(dir, 'deprecated.min.json'));
  const en = readJson<{
    en: { presets: { presets: Record<string, RawTranslation>; fields: Record<string, { options?: Record<string, unknown> }> } };
  }>(join(dir, 'translations', 'en.min.json')).en.presets;

  const keys = new Set<string>(CATEGORY_KEYS);
  const candidates = new Map<string, RawPreset>();
  const sourceOnly = new Set(SOURCE_ONLY_PRESETS);
  for (const [id, preset] of Object.entries(presets)) {
    const key = id.split('/')[0]!;
    if (sourceOnly.has(id)) {
      candidates.set(id, preset);
      continue;
    }
    if (!keys.has(key)) continue;
    if (!preset.geometry.some((g) => g === 'point' || g === 'area')) continue;
    if (preset.replacement) continue;
    // `amenity=*`, `tourism=*`, `leisure=*`: iD's unsearchable fallbacks, not a kind of place.
    if (id === key && preset.searchable === false) continue;
    candidates.set(id, preset);
  }

  const enName = (id: string): string | undefined => en.presets[id]?.name;
  const searchableByName = new Map<string, string[]>();
  for (const [id, p] of candidates) {
    const name = enName(id);
    if (p.searchable === false || !name) continue;
    searchableByName.set(name, [...(searchableByName.get(name) ?? []), id]);
  }

  /** The preset a candidate is merged into, or itself. */
  const directCanonical = (id: string, p: RawPreset): string => {
    const ref = /^\{(.+)\}$/.exec(p.name ?? '')?.[1];
    if (ref && candidates.has(ref)) return ref;
    if (p.locationSet) {
      const twin = [...candidates].find(([other, q]) => other !== id && !q.locationSet && sameTags(q.tags, p.tags));
      if (twin) return twin[0];
    }
    if (p.searchable !== false) return id;
    const entries = Object.entries(p.tags);
    if (entries.length === 1 && entries[0]![1] === 'yes' && candidates.has(entries[0]![0])) return entries[0]![0];
    const dep = deprecated.find((d) => d.replace && sameTags(d.old, p.tags));
    if (dep?.replace) {
      const target = [...candidates].find(([, q]) => q.searchable !== false && sameTags(q.tags, dep.replace!));
      if (target) return target[0];
    }
    const name = enName(id);
    const same = name ? searchableByName.get(name) : undefined;
    if (same?.length === 1) return same[0]!;
    return id;
  };
  const canonical = new Map<string, string>();
  for (const [id, p] of candidates) {
    let target = directCanonical(id, p);
    for (let hops = 0; hops < 5 && target !== id; hops++) {
      const next = directCanonical(target, candidates.get(target)!);
      if (next === target) break;
      target = next;
    }
    canonical.set(id, target);
  }
  // Merged presets without an English name of their own are not categories, only match patterns.
  const own = [...candidates.keys()].filter((id) => canonical.get(id) === id && enName(id));

  const bySlug = new Map<string, string[]>();
  for (const id of own) {
    const base = baseSlug(id);
    bySlug.set(base, [...(bySlug.get(base) ?? []), id]);
  }
  const slugOf = new Map<string, string>();
  // A key's generic preset (`shop`, `craft`) owns the key as its slug; then key priority, then preset id.
  const rank = (id: string) => (id.includes('/') ? 1 : 0) * 100 + SLUG_PRIORITY.indexOf(id.split('/')[0]!);
  for (const [base, ids] of bySlug) {
    ids.sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
    ids.forEach((id, i) => slugOf.set(id, i === 0 ? base : `${id.split('/')[0]}_${base}`));
  }
  const taken = new Map<string, string>();
  for (const [id, slug] of slugOf) {
    const other = taken.get(slug);
    if (other) throw new Error(`taxonomy: presets ${other} and ${id} both derive the slug ${slug}`);
    taken.set(slug, id);
  }
  for (const [id, target] of canonical) {
    if (!slugOf.has(id) && slugOf.has(target)) slugOf.set(id, slugOf.get(target)!);
  }

  const parentOf = (id: string): string | null => {
    const parts = id.split('/');
    for (let n = parts.length - 1; n >= 1; n--) {
      const up = parts.slice(0, n).join('/');
      const slug = candidates.has(up) ? slugOf.get(canonical.get(up)!) : undefined;
      if (slug !== undefined) return slug;
    }
    return null;
  };

  const categories: TaxonomyCategory[] = own
    .map((id) => ({ slug: slugOf.get(id)!, parent: parentOf(id), presetId: id, osmTags: candidates.get(id)!.tags, name: enName(id)! }))
    .sort((a, b) => (a.slug < b.slug ? -1 : 1));

  const patterns: MatchPattern[] = [];
  for (const [id, p] of candidates) {
    const slug = slugOf.get(id);
    if (!slug) continue;
    patterns.push({
      slug,
      presetId: id,
      tags: p.tags,
      addTags: p.addTags ?? {},
      score: p.matchScore ?? 1,
      searchable: p.searchable !== false,
      osm: !sourceOnly.has(id),
    });
  }

  const cuisineOptions = en.fields['cuisine']?.options ?? {};
  const cuisines = Object.entries(cuisineOptions)
    .filter((e): e is [string, string] => typeof e[1] === 'string')
    .map(([value, label]) => ({ value, label }));

  const upgrades: Record<string, Record<string, string>> = {};
  for (const d of deprecated) {
    const old = Object.entries(d.old);
    if (old.length === 1 && d.replace && old[0]![1] !== '*' && !Object.values(d.replace).includes('$1')) {
      upgrades[`${old[0]![0]}=${old[0]![1]}`] = d.replace;
    }
  }

  cached = { version: taxonomyVersion(), categories, patterns, cuisines, upgrades };
  return cached;
}

/** Every locale's translation file name (`de`, `de-CH`, `pt-BR`…), base languages before regional variants. */
function locales(): string[] {
  const files = readdirSync(join(packageDir(), 'dist', 'translations'));
  return files
    .filter((f) => f.endsWith('.min.json') && f !== 'index.min.json')
    .map((f) => f.slice(0, -'.min.json'.length))
    .sort((a, b) => a.split('-').length - b.split('-').length || (a < b ? -1 : 1));
}

function readNames(langs: readonly string[]): TaxonomyName[] {
  const { patterns, categories } = loadTaxonomy();
  const ownPreset = new Map(categories.map((c) => [c.presetId, c.slug]));
  const slugByPreset = new Map(patterns.map((p) => [p.presetId, p.slug]));
  const dir = join(packageDir(), 'dist', 'translations');
  const names: TaxonomyName[] = [];
  const seen = new Set<string>();
  for (const lang of langs) {
    const file = readJson<Record<string, { presets?: { presets?: Record<string, RawTranslation> } }>>(join(dir, `${lang}.min.json`));
    const translations = Object.values(file)[0]?.presets?.presets ?? {};
    const base = lang.split('-')[0]!;
    const add = (slug: string, text: string, kind: TaxonomyName['kind']) => {
      const name = text.trim();
      const norm = foldText(name);
      if (!norm) return;
      const key = `${norm}\u0000${slug}\u0000`;
      if (seen.has(key + lang) || (base !== lang && seen.has(key + base))) return;
      seen.add(key + lang);
      names.push({ norm, slug, lang, name, isName: kind === 'name', kind });
    };
    const entries = Object.entries(translations).filter(([presetId]) => slugByPreset.has(presetId));
    // Own names first: a name that is also another preset's term in the same language stays a name.
    for (const [presetId, t] of entries) {
      if (t.name && ownPreset.has(presetId)) add(ownPreset.get(presetId)!, t.name, 'name');
    }
    for (const [presetId, t] of entries) {
      const slug = slugByPreset.get(presetId)!;
      if (t.name && !ownPreset.has(presetId)) add(slug, t.name, 'alias');
      for (const alias of (t.aliases ?? '').split('\n')) add(slug, alias, 'alias');
      for (const term of (t.terms ?? '').split(',')) add(slug, term, 'term');
    }
  }
  return names;
}

let cachedNames: TaxonomyName[] | undefined;
let cachedEnglish: TaxonomyName[] | undefined;

/**
 * Every name, alias and search term of every category in every locale, folded. A regional locale (`de-CH`)
 * keeps only what its base language (`de`) does not already say. Reads all translation files (~14 MB); cached.
 */
export function loadTaxonomyNames(): TaxonomyName[] {
  cachedNames ??= readTaxonomyNames();
  return cachedNames;
}

/** `loadTaxonomyNames` without keeping them: for a one-off use (writing the tables) in a process that then serves. */
export function readTaxonomyNames(): TaxonomyName[] {
  return cachedNames ?? readNames(locales());
}

/** The English names, aliases and terms only (one file, fast): what the importers' classifier starts with. */
export function loadEnglishNames(): TaxonomyName[] {
  cachedEnglish ??= cachedNames?.filter((n) => n.lang === 'en') ?? readNames(['en']);
  return cachedEnglish;
}

/** A label of an address or contact field in one of the taxonomy's languages (`Telefon`, `Código postal`). */
export interface FieldLabel {
  /** `name`, `phone`, `email`, `website`, `address`, or a part of the address: `street`, `housenumber`, `postcode`, `city`, `country`. */
  field: string;
  text: string;
}

const labelledFields = ['name', 'phone', 'email', 'website', 'address'] as const;
const addressParts = ['street', 'housenumber', 'postcode', 'city', 'country'] as const;

/**
 * The labels, search terms and address placeholders of the editor's name, phone, email, website and address
 * fields, in every locale the taxonomy ships: what people call these columns in their own language. Reads
 * every translation file (about a second); callers keep the result.
 */
export function readFieldLabels(): FieldLabel[] {
  type RawField = { label?: string; terms?: string; labels?: Record<string, string>; placeholders?: Record<string, string> };
  const dir = join(packageDir(), 'dist', 'translations');
  const out: FieldLabel[] = [];
  for (const lang of locales()) {
    const file = readJson<Record<string, { presets?: { fields?: Record<string, RawField> } }>>(join(dir, `${lang}.min.json`));
    const fields = Object.values(file)[0]?.presets?.fields ?? {};
    for (const field of labelledFields) {
      const f = fields[field];
      if (!f) continue;
      if (f.label) out.push({ field, text: f.label });
      for (const term of (f.terms ?? '').split(',')) if (term.trim()) out.push({ field, text: term.trim() });
    }
    const address = fields.address;
    for (const part of addressParts) {
      for (const text of [address?.labels?.[part], address?.placeholders?.[part]]) {
        // Placeholders of numbers are examples (`123`), not names.
        if (text && /\p{L}/u.test(text)) out.push({ field: part, text });
      }
    }
  }
  return out;
}
