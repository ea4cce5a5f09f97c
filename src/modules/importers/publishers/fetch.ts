import { AppError } from '../../../infra/errors.ts';
import { guardedGet } from '../../../infra/http/guarded-get.ts';
import type { HttpReadOptions } from '../importer.types.ts';

/** A publisher's catalog, listing or index could not be read: the field names the option that points at it. */
export function unreachable(field: string, url: string, message: string): AppError {
  return new AppError('validation_failed', `cannot read ${url}: ${message}`, { errors: [{ field, message }] });
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * A small document of a publisher (a STAC catalog, a bucket listing, Geofabrik's index), through the
 * outbound guard, bounded in time and bytes. undefined for a 404 (the caller knows what is optional);
 * any other answer than 200 is an error naming `field`.
 */
export async function fetchDocument(url: string, http: HttpReadOptions, maxBytes: number, field: string): Promise<Buffer | undefined> {
  let answer: Awaited<ReturnType<typeof guardedGet>>;
  try {
    answer = await guardedGet(url, {
      allowPrivate: http.allowPrivate === true,
      timeoutMs: http.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxBytes,
      ...(http.headers ? { headers: http.headers } : {}),
      keep: (status) => status === 200,
    });
  } catch (error) {
    throw unreachable(field, url, (error as Error).message);
  }
  if (answer.status === 404) return undefined;
  if (answer.status !== 200) throw unreachable(field, url, `HTTP ${answer.status}`);
  return answer.body;
}

/** A JSON document (see `fetchDocument`); a 404 or a body that is not JSON is an error naming `field`. */
export async function fetchJson(url: string, http: HttpReadOptions, maxBytes: number, field: string): Promise<unknown> {
  const body = await fetchDocument(url, http, maxBytes, field);
  if (!body) throw unreachable(field, url, 'HTTP 404');
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw unreachable(field, url, 'not JSON');
  }
}

/** `base` with one trailing slash, so that relative names resolve under it. */
export const asDirectory = (base: string): string => (base.endsWith('/') ? base : `${base}/`);
