/**
 * Adds the categories of a newly published Overture or Foursquare taxonomy to the explicit mapping tables in
 * `src/modules/taxonomy/source-maps/` (what to do when a release brings new codes; see the taxonomy README).
 * Entries already in a table are kept as they are: the tables are reviewed by hand, this only proposes the new
 * ones, through the term matcher (the code, then its display name, then each parent up to the first level of
 * the publisher's tree). A code nothing matches is written as deliberately unmapped (null) for a reviewer.
 *
 *   node --import tsx scripts/category-maps.ts ../shared/data/taxonomies
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { createTermMatcher, GENERIC_LAST_WORD } from '../src/modules/taxonomy/classifier.ts';
import { SOURCE_MAPS, type SourceMapEntry } from '../src/modules/taxonomy/source-maps/index.ts';
import { loadEnglishNames, loadTaxonomy, loadTaxonomyNames } from '../src/modules/taxonomy/taxonomy.build.ts';

const dir = process.argv[2] ?? join(import.meta.dirname, '../../shared/data/taxonomies');
const rows = (file: string, delimiter = ','): Array<Record<string, string>> =>
  parse(readFileSync(join(dir, file), 'utf8'), { columns: true, bom: true, delimiter, trim: true, relax_quotes: true }) as Array<
    Record<string, string>
  >;
const matcher = createTermMatcher(loadTaxonomy(), loadEnglishNames(), loadTaxonomyNames);

/** A code with its path from the publisher's top level (the code last) and a display name. */
interface Published {
  path: string[];
  name?: string;
  /** Overture: the code of the old `categories` list the current one replaced. */
  old?: string;
}

/** `Furniture and Home Store` → itself, `Furniture`, `Home Store`: a name that joins two trades matches on either. */
const parts = (name: string): string[] => {
  const out = [name, ...name.split(/,? and |, /).filter((p) => p !== name)];
  return [...out, ...out.map((p) => p.toLowerCase().replace(GENERIC_LAST_WORD, '')).filter((p) => !out.includes(p))];
};

/**
 * A slug for a published category: the term matcher on the code, its names and (Overture) the old code it
 * replaced; else, going up the publisher's tree to its first level, a parent's entry in the table (reviewed
 * by hand) or what the matcher makes of the parent. The top level (`shopping`, `Retail`) is too broad to inherit.
 */
function propose(
  source: string,
  { path, name, old }: Published,
  table: ReadonlyMap<string, SourceMapEntry>,
  key: (path: string[]) => string,
): string | null {
  for (let i = path.length - 1; i >= Math.min(1, path.length - 1); i--) {
    const own = i === path.length - 1;
    const reviewed = own ? undefined : table.get(key(path.slice(0, i + 1)));
    if (reviewed) return reviewed;
    const terms = [...parts(path[i]!), ...(own && name ? parts(name) : []), ...(own && old ? [old] : [])];
    // Weak hits (a search term, a name in another language) are guesses: a reviewer would rather start from a parent.
    for (const term of terms) {
      const hit = matcher.match(source, term);
      if (hit?.strong) return hit.slug;
    }
  }
  return null;
}

function overture(): Map<string, Published> {
  const out = new Map<string, Published>();
  const add = (path: string[], name?: string, old?: string) => {
    const code = path.at(-1);
    if (code && !out.has(code)) out.set(code, { path, ...(name ? { name } : {}), ...(old && old !== code ? { old } : {}) });
  };
  const split = (p: string) =>
    p
      .split('>')
      .map((s) => s.trim())
      .filter(Boolean);
  const hierarchies = rows('overture-categories-hierarchies-2026-03-04.csv');
  for (const r of hierarchies) add(split(r['New Primary Hierarchy']!), r['New Display Name'], r['Old Primary Category']);
  for (const r of hierarchies) if (r['Old Primary Hierarchy']) add(split(r['Old Primary Hierarchy']));
  for (const r of rows('overture-categories-counts-2025-12-05.csv')) add(JSON.parse(r['hierarchy'] || '[]') as string[]);
  // Basic categories are codes of the tree too, mostly; the few that are not are looked up on their own.
  // A code can differ from the last step of its path (`b2b_agricultural_service` at `… > b2b_agriculture_service`).
  for (const r of hierarchies)
    if (r['New Primary Category'])
      add([...split(r['New Primary Hierarchy']!).slice(0, -1), r['New Primary Category']], r['New Display Name']);
  for (const r of hierarchies)
    for (const k of ['New Basic Level Category', 'Old Primary Category', 'PC Redirect To']) if (r[k]) add([r[k]!]);
  for (const r of rows('overture-categories-counts-2025-12-05.csv'))
    for (const k of ['basic_category', 'primary_category']) if (r[k]) add([r[k]!]);
  for (const r of rows('overture-categories-legacy.csv', ';')) {
    add(
      r['Overture Taxonomy']!.replace(/^\[|\]$/g, '')
        .split(',')
        .map((s) => s.trim()),
    );
  }
  return out;
}

function foursquare(): Map<string, Published> {
  const out = new Map<string, Published>();
  for (const r of rows('fsq-os-categories-1245.csv'))
    out.set(r['category_label']!, { path: r['category_label']!.split(' > '), name: r['category_name']! });
  return out;
}

function write(source: string, published: Map<string, Published>, key: (path: string[]) => string): void {
  const table = new Map<string, SourceMapEntry>(Object.entries(SOURCE_MAPS[source] ?? {}));
  let added = 0;
  // Parents first, so that a child sees what its parent was given.
  for (const [code, p] of [...published].sort((a, b) => a[1].path.length - b[1].path.length)) {
    if (table.has(code)) continue;
    table.set(code, propose(source, p, table, key));
    added++;
  }
  const sorted = [...table].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const lines = sorted.map(([code, slug]) => `  ${JSON.stringify(code)}: ${JSON.stringify(slug)},`);
  const file = join(import.meta.dirname, `../src/modules/taxonomy/source-maps/${source}.ts`);
  const header = readFileSync(file, 'utf8').split('\n// BEGIN TABLE\n')[0];
  writeFileSync(file, `${header}\n// BEGIN TABLE\n${lines.join('\n')}\n};\n`);
  const unmapped = sorted.filter(([, s]) => s === null).length;
  console.log(`${source}: ${sorted.length} entries (${added} proposed, ${unmapped} unmapped)`);
}

// Overture's table is keyed by code, Foursquare's by the whole label.
write('overture', overture(), (path) => path.at(-1)!);
write('foursquare', foursquare(), (path) => path.join(' > '));
