import { parentPort } from 'node:worker_threads';
import { extractContacts } from './extract.ts';
import type { ExtractRequest, ExtractResponse } from './extract-pool.ts';

/** A thread of the extraction pool: one site's pages in, its contacts (or the error's message) out. */
parentPort!.on('message', (request: ExtractRequest) => {
  let response: ExtractResponse;
  try {
    response = { id: request.id, contacts: extractContacts(request.pages, request.context) };
  } catch (error) {
    response = { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(response);
});
