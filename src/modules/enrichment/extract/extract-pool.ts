import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Semaphore } from '../crawler/politeness.ts';
import type { ExtractedContacts, PageInput } from './extract.ts';

export interface ExtractRequest {
  id: number;
  pages: PageInput[];
  context: { countryCode: string | null; siteDomain: string };
}
export type ExtractResponse = { id: number; contacts: ExtractedContacts } | { id: number; error: string };

interface Task {
  resolve: (contacts: ExtractedContacts) => void;
  reject: (error: Error) => void;
}

interface Thread {
  worker: Worker;
  tasks: Map<number, Task>;
}

function workerFile(): string {
  const name = import.meta.url.endsWith('.ts') ? './extract-worker-tsx.mjs' : './extract.worker.js';
  return fileURLToPath(new URL(name, import.meta.url));
}

/**
 * Contact extraction (`extractContacts`: HTML parsing, the text's patterns, libphonenumber) on a few worker
 * threads instead of the main thread, where it competed with the API's requests in `serve`. At most
 * `queuePerThread` sites are handed to each thread at once; more wait here, in order (the number of waiting
 * callers is bounded by the crawl's concurrency). A thread that dies fails its sites' extractions (the
 * pipeline records them as `error`) and is replaced.
 */
export class ExtractionPool {
  private readonly threads: Thread[] = [];
  private readonly slots: Semaphore;
  private readonly file = workerFile();
  private readonly closing = new AbortController();
  private nextId = 0;

  constructor(size: number, queuePerThread = 2) {
    this.slots = new Semaphore(size * queuePerThread);
    for (let i = 0; i < size; i++) this.threads.push(this.spawn());
  }

  async extract(pages: PageInput[], context: ExtractRequest['context']): Promise<ExtractedContacts> {
    const release = await this.slots.acquire(this.closing.signal);
    try {
      const thread = this.threads.reduce((a, b) => (b.tasks.size < a.tasks.size ? b : a));
      const id = this.nextId++;
      return await new Promise<ExtractedContacts>((resolve, reject) => {
        thread.tasks.set(id, { resolve, reject });
        thread.worker.postMessage({ id, pages, context } satisfies ExtractRequest);
      });
    } finally {
      release();
    }
  }

  async close(): Promise<void> {
    this.closing.abort(new Error('the extraction pool is closed'));
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  private spawn(): Thread {
    const worker = new Worker(this.file, { resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 } });
    worker.unref();
    const thread: Thread = { worker, tasks: new Map() };
    worker.on('message', (response: ExtractResponse) => {
      const task = thread.tasks.get(response.id);
      if (!task) return;
      thread.tasks.delete(response.id);
      if ('error' in response) task.reject(new Error(response.error));
      else task.resolve(response.contacts);
    });
    const fail = (error: Error) => {
      for (const task of thread.tasks.values()) task.reject(error);
      thread.tasks.clear();
      if (this.closing.signal.aborted) return;
      const index = this.threads.indexOf(thread);
      if (index >= 0) this.threads[index] = this.spawn();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (this.threads.includes(thread)) fail(new Error(`an extraction thread exited (${code})`));
    });
    return thread;
  }
}
