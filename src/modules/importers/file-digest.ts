import { Worker } from 'node:worker_threads';

const digestThread = `
const { createHash } = require('node:crypto');
const { createReadStream } = require('node:fs');
const { workerData, parentPort } = require('node:worker_threads');
const hash = createHash('sha256');
createReadStream(workerData, { highWaterMark: 1 << 20 })
  .on('data', (chunk) => hash.update(chunk))
  .on('error', (error) => parentPort.postMessage({ error: error.message }))
  .on('end', () => parentPort.postMessage({ digest: hash.digest('hex') }));
`;

/**
 * The file's SHA-256, read and hashed on a thread of its own while the import runs: on the writing
 * thread it would take CPU from the writer, and the writer would wait for the whole file's digest
 * before its first chunk.
 */
export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(digestThread, { eval: true, workerData: path });
    worker.once('message', (m: { digest?: string; error?: string }) =>
      m.digest ? resolve(m.digest) : reject(new Error(`cannot read ${path}: ${m.error}`)),
    );
    worker.once('error', reject);
    // After a message this settles nothing: the promise is settled already.
    worker.once('exit', (code) => reject(new Error(`the digest thread for ${path} exited with code ${code}`)));
  });
}
