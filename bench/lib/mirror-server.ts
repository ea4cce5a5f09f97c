/**
 * The publishers' mirror (`test/helpers/mirrors.ts`) served from a process of its own, so that the bench can
 * wait for a CLI run (spawnSync) while the mirror answers it. Prints one JSON line, `{ url, stats }`; `stats`
 * is a second server on loopback: GET `/` answers the bytes sent per path since the last GET `/reset`.
 *
 *   node --import tsx bench/lib/mirror-server.ts ROOT
 */
import { createServer } from 'node:http';
import { serveMirror } from '../../test/helpers/mirrors.ts';

const mirror = await serveMirror(process.argv[2]!);
const stats = createServer((req, res) => {
  if (req.url === '/reset') {
    mirror.sent.clear();
    mirror.requests.length = 0;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ sent: Object.fromEntries(mirror.sent), requests: mirror.requests.length }));
});
await new Promise<void>((done) => stats.listen(0, '127.0.0.1', done));
console.log(JSON.stringify({ url: mirror.url, stats: `http://127.0.0.1:${(stats.address() as { port: number }).port}/` }));
