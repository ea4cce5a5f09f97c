import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The whole regional extracts a country-like file is made of: mountains, towns, an island; mostly non-POI objects. */
export const countryLikeExtracts = ['andorra-2026', 'liechtenstein-2024', 'malta-2018'] as const;

/**
 * Each copy's ids start this far above the previous copy's: more than any of the extracts holds of one type
 * (490,035 nodes in Andorra), so copies never collide, and ids stay sparse as in a real country file
 * (Germany's node ids reach ~1.3·10¹⁰ for ~4·10⁸ nodes; here ~1.3·10⁹ for ~5·10⁷).
 */
const ID_STRIDE = 10_000_000;

export interface CountryLikeFile {
  path: string;
  nodes: number;
  ways: number;
  relations: number;
}

const run = (command: string, args: string[]): string => {
  const r = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.error) throw new Error(`${command} is not installed (Debian package osmium-tool): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${command} ${args[0]} failed: ${r.stderr.trim()}`);
  return r.stdout;
};

/** Object counts from `osmium fileinfo -e` (reads the whole file). */
export function osmiumCounts(path: string): { nodes: number; ways: number; relations: number } {
  const get = (what: string) => Number(run('osmium', ['fileinfo', '-e', '-g', `data.count.${what}`, path]).trim());
  return { nodes: get('nodes'), ways: get('ways'), relations: get('relations') };
}

/**
 * `copies` renumbered copies of each extract in `osmDir`, merged by `osmium merge` into one file sorted by
 * type then id, as Geofabrik's are: the mix of a real country (mostly untagged way nodes, ways and
 * multipolygon relations) at `copies` times the size. 44 copies make 50.26 million nodes. Built once into
 * `cacheDir` (under var/, not committed) and reused while the file is there; the parts are deleted.
 */
export function countryLikePbf(osmDir: string, cacheDir: string, copies: number, log: (line: string) => void): CountryLikeFile {
  mkdirSync(cacheDir, { recursive: true });
  const path = join(cacheDir, `country-like-x${copies}.osm.pbf`);
  if (!existsSync(path)) {
    const parts = mkdtempSync(join(cacheDir, 'parts-'));
    try {
      log(`building ${path} from ${copies} renumbered copies of ${countryLikeExtracts.join(', ')} (osmium; cached for later runs) …`);
      const inputs: string[] = [];
      for (let copy = 0; copy < copies; copy++) {
        countryLikeExtracts.forEach((name, e) => {
          const start = String(1 + (copy * countryLikeExtracts.length + e) * ID_STRIDE);
          const part = join(parts, `${copy}-${name}.osm.pbf`);
          run('osmium', ['renumber', '--start-id', `${start},${start},${start}`, '-O', '-o', part, join(osmDir, `${name}.osm.pbf`)]);
          inputs.push(part);
        });
      }
      const partial = join(parts, 'merged.osm.pbf');
      // The merge is sorted by type then id (osmium merge reads sorted inputs), as a Geofabrik download is,
      // and says so in its header as one does (osmium writes `Sort.Type_then_ID` only when told).
      run('osmium', ['merge', '-O', '--output-header=sorting=Type_then_ID', '-o', partial, ...inputs]);
      renameSync(partial, path);
    } finally {
      rmSync(parts, { recursive: true, force: true });
    }
  }
  return { path, ...osmiumCounts(path) };
}
