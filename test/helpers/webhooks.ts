import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The verification snippet of the exports README, exactly as documented, loaded as a module. */
export async function readmeSnippet(): Promise<
  (rawBody: string | Buffer, header: string, secret: string, toleranceSeconds?: number) => boolean
> {
  const readme = readFileSync(new URL('../../src/modules/exports/README.md', import.meta.url), 'utf8');
  const block = /<!-- webhook-verify-snippet -->\s*```js\n([\s\S]*?)```\s*<!-- \/webhook-verify-snippet -->/.exec(readme);
  assert.ok(block, 'the README has the verification snippet between its markers');
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-snippet-'));
  const file = join(dir, 'verify.mjs');
  writeFileSync(file, block[1]!);
  try {
    return (await import(pathToFileURL(file).href)).verifyLeadAtlasSignature;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1 answering the given statuses in turn (then 200). */
export async function receiver(statuses: number[]): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return {
    url: `http://127.0.0.1:${address.port}/hooks/leadatlas?k=1`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
