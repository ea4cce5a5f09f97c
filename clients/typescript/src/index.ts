/**
 * The LeadAtlas API client: the operations of the server's OpenAPI document, typed by openapi-typescript
 * (`schema.ts`, generated) and called through openapi-fetch, with what a hand-written client would repeat:
 * the token, retries that honour `Retry-After`, every error as a typed problem document, and iterators over
 * every page of a search or a list.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';

/** An error answer of the API (RFC 9457): `type`, `title`, `status`, `detail`, `request_id`, `code`, and per code more. */
export type Problem = components['schemas']['Problem'];
export type SearchQuery = NonNullable<paths['/api/v2/map/search']['get']['parameters']['query']>;
export type AreaSearch = paths['/api/v2/map/search']['post']['requestBody']['content']['application/json'];
export type SearchPage = paths['/api/v2/map/search']['get']['responses'][200]['content']['application/json'];
export type LeadsQuery = NonNullable<paths['/api/v1/user-api/places']['get']['parameters']['query']>;
export type LeadsPage = paths['/api/v1/user-api/places']['get']['responses'][200]['content']['application/json'];
export type ExportJob = paths['/api/v2/exports/{id}']['get']['responses'][200]['content']['application/json'];

/** An answer that is not a success, after the retries: the problem document the server sent, typed. */
export class LeadAtlasProblem extends Error {
  override name = 'LeadAtlasProblem';
  readonly status: number;
  /** The problem's `code` (`validation_failed`, `forbidden`, `rate_limited`…), or `http_<status>` for a body that was not one. */
  readonly code: string;
  readonly problem: Problem;
  /** Seconds the server asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;

  constructor(problem: Problem, retryAfter?: number) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.status = problem.status;
    this.code = typeof problem.code === 'string' ? problem.code : `http_${problem.status}`;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

export interface LeadAtlasOptions {
  /** Where the API is served, e.g. `https://leadatlas.example.com`. */
  baseUrl: string;
  /** A personal access token (`la_pat_…`). */
  token: string;
  /** Retries of a 429 or 503 answer (default 3); 0 turns them off. */
  retries?: number;
  /** The longest wait for one retry, in ms (default 30 000): a `Retry-After` beyond it is not waited for, the problem is thrown. */
  maxRetryDelayMs?: number;
  /** The `fetch` to call (default the global one). */
  fetch?: typeof fetch;
}

const retryStatuses = new Set([429, 503]);

/** `Retry-After` in seconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The problem document of an error answer; a body that is not one (a proxy's HTML page) becomes one that quotes it. */
async function problemOf(response: Response): Promise<Problem> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as Partial<Problem>;
    if (body && typeof body === 'object' && typeof body.status === 'number' && typeof body.title === 'string') return body as Problem;
  } catch {}
  return {
    type: 'about:blank',
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail: text.slice(0, 500),
    instance: new URL(response.url || 'http://unknown/').pathname,
    request_id: response.headers.get('x-request-id') ?? '',
  } as Problem;
}

/**
 * The `fetch` of the client: the token on every request, 429 and 503 retried (at most `retries` times, waiting what
 * `Retry-After` says or 0.5 s, 1 s, 2 s… without one, never longer than `maxRetryDelayMs`), and any other answer that
 * is not a success thrown as a LeadAtlasProblem.
 */
function fetchWithRetries(options: LeadAtlasOptions): typeof fetch {
  const send = options.fetch ?? globalThis.fetch;
  const retries = options.retries ?? 3;
  const maxDelay = options.maxRetryDelayMs ?? 30_000;
  return async (input, init) => {
    const request = new Request(input, init);
    request.headers.set('authorization', `Bearer ${options.token}`);
    for (let attempt = 0; ; attempt++) {
      const response = await send(request.clone());
      if (response.ok) return response;
      const wait = retryAfterSeconds(response.headers.get('retry-after'));
      const delayMs = wait === undefined ? 500 * 2 ** attempt : wait * 1000;
      if (retryStatuses.has(response.status) && attempt < retries && delayMs <= maxDelay) {
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        continue;
      }
      throw new LeadAtlasProblem(await problemOf(response), wait);
    }
  };
}

/** The cursor of a `links.next` URL. */
function cursorOf(next: string): string {
  const cursor = new URL(next, 'http://base/').searchParams.get('cursor');
  if (!cursor) throw new Error(`links.next has no cursor: ${next}`);
  return cursor;
}

/** The data of an answer; the client's fetch throws every error answer, so there always is some. */
async function dataOf<T>(call: Promise<{ data?: T; response: Response }>): Promise<T> {
  const { data, response } = await call;
  if (data === undefined) throw new Error(`${response.url} answered ${response.status} without a body`);
  return data;
}

export class LeadAtlas {
  /**
   * Every operation of the API, typed by path and method: `api.GET('/api/v2/countries')`,
   * `api.POST('/api/v2/exports', { body: { search_id } })`. Answers `{ data, response }`; an error throws LeadAtlasProblem.
   */
  readonly api: Client<paths>;

  constructor(options: LeadAtlasOptions) {
    this.api = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/$/, ''), fetch: fetchWithRetries(options) });
  }

  /** One page of a search (saved for the account: `search_id` is what exports take). */
  search(query: SearchQuery): Promise<SearchPage> {
    return dataOf(this.api.GET('/api/v2/map/search', { params: { query } }));
  }

  /** Every page of a search, first to last, following `links.next`. */
  async *searchPages(query: SearchQuery): AsyncGenerator<SearchPage> {
    const page = await this.search(query);
    yield page;
    yield* this.nextPages(page, query);
  }

  /** Every page of a search in a drawn area (GeoJSON polygon), first to last. */
  async *searchAreaPages(body: AreaSearch): AsyncGenerator<SearchPage> {
    const page = await dataOf(this.api.POST('/api/v2/map/search', { body }));
    yield page;
    yield* this.nextPages(page, body);
  }

  private async *nextPages(page: SearchPage, first: { per_page?: number; fields?: string }): AsyncGenerator<SearchPage> {
    const { per_page, fields } = first;
    while (page.links.next) {
      page = await this.search({ cursor: cursorOf(page.links.next), per_page, fields });
      yield page;
    }
  }

  /** Every page of the account's leads (the places it has exported), newest first. */
  async *leadPages(query: Omit<LeadsQuery, 'cursor' | 'page'> = {}): AsyncGenerator<LeadsPage> {
    let cursor: string | undefined;
    do {
      const page: LeadsPage = await dataOf(this.api.GET('/api/v1/user-api/places', { params: { query: { ...query, cursor } } }));
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** Starts an export job of a saved search. */
  startExport(body: paths['/api/v2/exports']['post']['requestBody']['content']['application/json']): Promise<ExportJob> {
    return dataOf(this.api.POST('/api/v2/exports', { body }));
  }

  /** An export job: its status and, once it has succeeded, `download.url`. */
  getExport(id: string): Promise<ExportJob> {
    return dataOf(this.api.GET('/api/v2/exports/{id}', { params: { path: { id } } }));
  }

  /** Reads an export job until it has succeeded (or throws when it failed or `timeoutMs` passed). */
  async waitForExport(id: string, { intervalMs = 1000, timeoutMs = 10 * 60_000 } = {}): Promise<ExportJob> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await this.getExport(id);
      if (job.status === 'succeeded') return job;
      if (job.status === 'failed') throw new Error(`export ${id} failed: ${JSON.stringify(job.failure)}`);
      if (Date.now() + intervalMs > deadline) throw new Error(`export ${id} is still ${job.status} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

/** A pages iterator's items, one by one: `for await (const place of items(client.searchPages({ type: 'vet', city: 'Munich' })))`. */
export async function* items<T>(pages: AsyncIterable<{ data: T[] }>): AsyncGenerator<T> {
  for await (const page of pages) yield* page.data;
}
