import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { poiKeys } from '../../src/modules/importers/readers/osm-tags.ts';
import { runTool } from './tools.ts';

/** The real OpenStreetMap files in ../shared/data/osm. */
export const osmDir = resolve(import.meta.dirname, '../../../shared/data/osm');
export const mergedPbf = join(osmDir, 'osm-pois-all.osm.pbf');
export const mergedNdjson = join(osmDir, 'osm-pois-all.ndjson.gz');
/** The nine extracts, without the merged file. */
export const osmExtracts = readdirSync(osmDir)
  .filter((f) => f.endsWith('.osm.pbf') && f !== 'osm-pois-all.osm.pbf')
  .sort();

/** The osmium filter for POIs: any object with one of the POI keys. */
export const poiFilter = `nwr/${poiKeys.join(',')}`;

/**
 * Objects per type that `osmium tags-filter -R` keeps after each filter in turn: only the matching
 * objects, not the nodes and members they reference. Needs Debian's osmium-tool (`scripts/test-deps.sh` installs it; a test fails with one line without it).
 */
export function osmiumCount(file: string, ...filters: string[]): { nodes: number; ways: number; relations: number; total: number } {
  const dir = mkdtempSync(join(tmpdir(), 'osmium-'));
  try {
    let input = file;
    filters.forEach((filter, i) => {
      const output = join(dir, `${i}.osm.pbf`);
      runTool('osmium', ['tags-filter', '-R', '-O', '-o', output, input, filter]);
      input = output;
    });
    const get = (what: string) => Number(runTool('osmium', ['fileinfo', '-e', '-g', `data.count.${what}`, input]).toString());
    const counts = { nodes: get('nodes'), ways: get('ways'), relations: get('relations') };
    return { ...counts, total: counts.nodes + counts.ways + counts.relations };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
