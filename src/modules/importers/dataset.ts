import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { glob } from 'tinyglobby';
import { AppError } from '../../infra/errors.ts';

/**
 * Datasets: each import is a snapshot of a named dataset (`porto`, `yelp-2024`). Re-importing a dataset
 * retires the places of it (and of the same source) that the new snapshot no longer holds (see
 * `finishRun` in `import-runs.repository.ts` and docs/datasets.md).
 */

/** Compression suffixes, then format suffixes, taken off a file name to name its dataset. */
const compression = /\.(gz|gzip|bz2|zst)$/i;
const formatSuffix = /\.(osm|pbf|ndjson|jsonl|geojsonseq|geojson|json|csv|tsv|txt|parquet|geoparquet)$/i;

/** The default dataset of a file: its name without compression and format suffixes (`porto.osm.pbf` → `porto`). */
export function datasetOfPath(path: string): string {
  // A URL names its dataset by its file name too, without the query.
  let name = basename(/^https?:\/\//i.test(path) ? new URL(path).pathname : path).replace(compression, '');
  for (;;) {
    const next = name.replace(formatSuffix, '');
    if (next === name || next === '') break;
    name = next;
  }
  return name;
}

/** Letters or digits first, then letters, digits, `.`, `_` or `-`; at most 100 characters. */
const datasetName = /^[\p{L}\p{N}][\p{L}\p{N}._-]{0,99}$/u;

/** A dataset name as given (`--dataset`), checked. */
export function checkDatasetName(name: string): string {
  if (!datasetName.test(name)) {
    throw new AppError('validation_failed', `invalid dataset name ${JSON.stringify(name)}`, {
      errors: [{ field: 'dataset', message: 'letters, digits, ".", "_" or "-", starting with a letter or digit, at most 100 characters' }],
    });
  }
  return name;
}

/** Characters that make an argument a glob pattern rather than a file name. */
const globCharacters = /[*?[\]{}]/;

/**
 * The files named by import arguments: a URL or an existing file as given, a pattern (`'part-*.parquet'`,
 * quoted so that the shell leaves it alone and long lists pass) expanded to the files it matches, in name
 * order, so the parts of a release are read in the order it numbers them. A pattern that matches nothing is
 * an error: a release half found is worse than none (its import would retire the places of the missing parts).
 */
export async function expandImportArguments(args: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const arg of args) {
    if (/^https?:\/\//i.test(arg) || !globCharacters.test(arg) || existsSync(arg)) {
      files.push(arg);
      continue;
    }
    const matches = await glob(arg, { absolute: true, onlyFiles: true, expandDirectories: false });
    if (matches.length === 0) {
      throw new AppError('not_found', `no file matches ${arg}`, {
        errors: [{ field: 'files', message: `the pattern ${arg} matches no file` }],
      });
    }
    files.push(...matches.sort(byName));
  }
  // The same file twice is a mistake, never two parts of a release: refused before anything is read.
  const seen = new Set<string>();
  for (const file of files) {
    const key = /^https?:\/\//i.test(file) ? file : resolve(file);
    if (seen.has(key)) {
      throw new AppError('validation_failed', `${file} is named twice: the files of one import are different files`, {
        errors: [{ field: 'files', message: `${file} is named twice` }],
      });
    }
    seen.add(key);
  }
  return files;
}

/** Name order with numbers compared as numbers (`part-9` before `part-10`). */
const byName = new Intl.Collator('en', { numeric: true }).compare;
