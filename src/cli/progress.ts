import { basename } from 'node:path';
import cliProgress from 'cli-progress';
import type { ImportProgress, ImportSummary } from '../modules/importers/import.service.ts';
import type { PublisherImport } from '../modules/importers/publishers/publisher-import.service.ts';

/** A progress bar on a terminal (stderr), nothing otherwise. */
export function progressRenderer(file: string): ((p: ImportProgress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let bar: cliProgress.SingleBar | undefined;
  return (p) => {
    if (!bar) {
      bar = new cliProgress.SingleBar(
        {
          format: `${basename(file)} {bar} {percentage}% | {places} places | {skipped} skipped${p.parts > 1 ? ' | part {partsDone}/{parts}' : ''}`,
          stream: process.stderr,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(p.totalBytes, 0, { places: 0, skipped: 0, partsDone: p.partsDone, parts: p.parts });
    }
    // The parts of a split release: the total grows as each part is opened.
    if (p.totalBytes !== bar.getTotal()) bar.setTotal(p.totalBytes);
    const c = p.counters;
    bar.update(Math.min(p.bytesRead, p.totalBytes), {
      places: c.imported_count + c.updated_count + c.unchanged_count,
      skipped: c.skipped_count,
      partsDone: p.partsDone,
      parts: p.parts,
    });
    if (p.bytesRead >= p.totalBytes) bar.stop();
  };
}

export function printImportSummary(s: ImportSummary): void {
  const reasons = Object.entries(s.skipped_reasons)
    .sort((a, b) => b[1] - a[1])
    .map(([r, n]) => `${r}: ${n}`)
    .join(', ');
  console.error(
    `${basename(s.path)} (${s.format}, dataset ${s.dataset}): read ${s.read_count}, imported ${s.imported_count}, updated ${s.updated_count}, ` +
      `unchanged ${s.unchanged_count}, retired ${s.retired_count}, merged ${s.merged_count}, skipped ${s.skipped_count}${reasons ? ` (${reasons})` : ''} ` +
      `in ${s.seconds.toFixed(2)} s, ${Math.round(s.placesPerSecond)} places/s`,
  );
}

/** A publisher's import (`import overture|foursquare|osm`, each of `market`): the run's summary, then what the border and the flags kept. */
export function printPublisherImport(r: PublisherImport): void {
  if (r.summary) printImportSummary(r.summary);
  const flagged = Object.entries(r.summary?.skipped_reasons ?? {})
    .filter(([k]) => k.startsWith('flagged '))
    .map(([k, n]) => `${k.slice(8)} ${n}`);
  console.error(
    `${r.publisher} ${r.release} (dataset ${r.dataset}): ${r.parts.read} of ${r.parts.total} files read; kept ${r.kept} (closed ${r.closed}), ` +
      `outside the border ${r.outsideBorder}${flagged.length > 0 ? `, flagged and not imported: ${flagged.join(', ')}` : ''}` +
      (r.followed ? `; feed ${r.followed.applied} change files applied, at ${r.followed.sequence}` : ''),
  );
}

/** A progress bar per table of a database copy, on a terminal (stderr); nothing otherwise. */
export function copyProgressRenderer(): ((table: string, done: number, total: number) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let bar: cliProgress.SingleBar | undefined;
  let current = '';
  return (table, done, total) => {
    if (table !== current) {
      bar?.stop();
      current = table;
      bar = new cliProgress.SingleBar(
        { format: `${table.padEnd(12)} {bar} {percentage}% | {value}/{total} rows`, stream: process.stderr, hideCursor: true },
        cliProgress.Presets.shades_classic,
      );
      bar.start(Math.max(total, 1), Math.min(done, total));
    }
    bar?.update(Math.min(done, total));
    if (done >= total) bar?.stop();
  };
}
