import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, normalize } from 'node:path';
import { osmDir } from './osm.ts';
import { runTool } from './tools.ts';

/**
 * A replication directory as planet and Geofabrik publish one, made from a real extract (Monaco unless another
 * is given): `versions` edits of it in osmium's OPL text (each renames a shop, deletes a named node, adds a new one, and bumps the
 * versions as the server would), one change file between each two (`osmium derive-changes`), numbered
 * 1…N with their states. `dir/v0.osm.pbf` is the extract, `dir/vN.osm.pbf` the last edit; `dir/feed/` the feed.
 */
export interface ReplicationFixture {
  dir: string;
  feed: string;
  versions: number;
  snapshot: (version: number) => string;
  /** The edits of each version, by source id. */
  edits: Array<{ renamed: string; deleted: string; created: string }>;
}

/** A named node that no way uses, by its OPL line. */
const poiLine = (line: string, wayNodes: Set<string>) =>
  line.startsWith('n') && /(^| )T(.*,)?name=/.test(line) && /(^| )T(.*,)?(shop|amenity)=/.test(line) && !wayNodes.has(line.split(' ')[0]!);

const bump = (line: string) => line.replace(/ v(\d+) /, (_, v: string) => ` v${Number(v) + 1} `);

export const stateText = (sequence: number, timestamp: string) =>
  `#${timestamp}\nsequenceNumber=${sequence}\ntimestamp=${timestamp.replace(/:/g, '\\:')}\n`;

export const sequenceFile = (sequence: number, suffix: string) => {
  const digits = String(sequence).padStart(9, '0');
  return `${digits.slice(0, 3)}/${digits.slice(3, 6)}/${digits.slice(6, 9)}${suffix}`;
};

export function buildReplication(dir: string, versions: number, extract = join(osmDir, 'monaco-2026.osm.pbf')): ReplicationFixture {
  const opl = (v: number) => join(dir, `v${v}.opl`);
  const snapshot = (v: number) => join(dir, `v${v}`, 'monaco.osm.pbf');
  runTool('osmium', ['cat', '-O', '-f', 'opl', extract, '-o', opl(0)]);
  let lines = readFileSync(opl(0), 'utf8').trimEnd().split('\n');
  const wayNodes = new Set(lines.filter((l) => l.startsWith('w')).flatMap((l) => (/ N(\S*)/.exec(l)?.[1] ?? '').split(',')));
  const pois = lines.filter((l) => poiLine(l, wayNodes)).map((l) => l.split(' ')[0]!);
  const feed = join(dir, 'feed');
  const edits: ReplicationFixture['edits'] = [];
  for (let v = 0; v <= versions; v++) {
    if (v > 0) {
      const [renamed, deleted, template] = [pois[3 * v]!, pois[3 * v + 1]!, pois[3 * v + 2]!];
      const created = `n${9_000_000_000 + v}`;
      const next: string[] = [];
      for (const line of lines) {
        const id = line.split(' ')[0]!;
        if (id === deleted) continue;
        next.push(id === renamed ? bump(line.replace(/(T|,)name=([^,\s]*)/, `$1name=$2%20%Edit%20%${v}`)) : line);
        if (id === template)
          next.push(line.replace(/^n\d+ v\d+/, `${created} v1`).replace(/(T|,)name=([^,\s]*)/, `$1name=$2%20%Neu%20%${v}`));
      }
      lines = next;
      edits.push({ renamed, deleted, created });
    }
    writeFileSync(opl(v), `${lines.join('\n')}\n`);
    mkdirSync(join(dir, `v${v}`), { recursive: true });
    // A new node sits after its template: sorted, as derive-changes needs.
    runTool('osmium', ['sort', '-O', opl(v), '-o', snapshot(v)]);
    if (v > 0) {
      const file = join(feed, sequenceFile(v, '.osc.gz'));
      mkdirSync(join(file, '..'), { recursive: true });
      runTool('osmium', ['derive-changes', '-O', snapshot(v - 1), snapshot(v), '-o', file]);
      writeFileSync(join(feed, sequenceFile(v, '.state.txt')), stateText(v, `2026-01-0${v}T00:00:00Z`));
    }
  }
  writeFileSync(join(feed, 'state.txt'), stateText(versions, `2026-01-0${versions}T00:00:00Z`));
  return { dir, feed, versions, snapshot, edits };
}

export interface FeedServer {
  url: string;
  /** Paths asked for, in order. */
  requests: string[];
  /** Answer a path with this instead of the file (status, body), or undefined to serve the file again. */
  override: Map<string, { status: number; body?: Buffer | string; delayMs?: number }>;
  close: () => Promise<void>;
}

/** Serves a replication directory on loopback, as a static file server does. */
export async function serveFeed(root: string): Promise<FeedServer> {
  const requests: string[] = [];
  const override: FeedServer['override'] = new Map();
  const server: Server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^\/+/, '');
    requests.push(path);
    const special = override.get(path);
    const answer = () => {
      if (special) {
        res.writeHead(special.status);
        res.end(special.body ?? '');
        return;
      }
      try {
        const body = readFileSync(join(root, path));
        res.writeHead(200, { 'content-length': body.length });
        res.end(body);
      } catch {
        res.writeHead(404);
        res.end();
      }
    };
    if (special?.delayMs) setTimeout(answer, special.delayMs);
    else answer();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    override,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
