import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';

/**
 * A larger NDJSON in the export's shape, so the rate is measured over seconds: the named POIs of
 * `source` (`osm-pois-all.ndjson.gz`) drawn in turn, each copy with a new id and its point moved by up to ~1 km.
 * Every line is a place (unnamed objects are left out), so lines/s and places/s are the same figure.
 */
export async function buildNdjson(source: string, path: string, lines: number): Promise<void> {
  const named: Array<Record<string, unknown> & { id: string; lat: number; lon: number }> = [];
  const input = pipeline(createReadStream(source), createGunzip(), () => {});
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    const r = JSON.parse(line) as { id: string; name: string | null; lat: number; lon: number };
    if (r.name) named.push(r);
  }
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out = createWriteStream(path);
  let chunk = '';
  for (let i = 0; i < lines; i++) {
    const r = named[i % named.length]!;
    const copy = {
      ...r,
      id: `${r.id[0]}${9_000_000_000 + i}`,
      lat: Number((r.lat + (random() - 0.5) * 0.02).toFixed(7)),
      lon: Number((r.lon + (random() - 0.5) * 0.02).toFixed(7)),
    };
    chunk += JSON.stringify(copy) + '\n';
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}
