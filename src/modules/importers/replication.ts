import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { gunzipSync } from 'node:zlib';
import { guardTarget } from '../../infra/http/outbound-guard.ts';

/**
 * An OpenStreetMap replication directory as planet.openstreetmap.org and Geofabrik publish it: `state.txt`
 * names the newest change file (`sequenceNumber`, `timestamp`), and change file N lives at `AAA/BBB/CCC.osc.gz`
 * (N in nine digits, split in threes) with its own `AAA/BBB/CCC.state.txt`. Every request goes through the
 * outbound guard (`guardTarget`: http/https, public addresses unless allowed, the connection pinned to the
 * checked address), is bounded in time and in bytes, and follows no redirect.
 */

export interface ReplicationState {
  sequence: number;
  /** ISO-8601, as the feed wrote it. */
  timestamp: string;
}

export interface FeedOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** The largest change file read, compressed and decompressed alike. */
  maxFileBytes: number;
}

/** The feed is not one the catalog can follow as it stands (a gap, a corrupt file, a sequence out of order): retrying will not help. */
export class ReplicationError extends Error {
  override name = 'ReplicationError';
}

/** A request that failed in a way that may pass (network, timeout, a 5xx answer): the follower retries it. */
export class TransientFeedError extends Error {
  override name = 'TransientFeedError';
}

/** `state.txt`: Java properties with `\:` for colons. */
export function parseState(text: string, what: string): ReplicationState {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('#')) continue;
    const at = line.indexOf('=');
    if (at > 0)
      fields.set(
        line.slice(0, at).trim(),
        line
          .slice(at + 1)
          .trim()
          .replace(/\\(.)/g, '$1'),
      );
  }
  const sequence = Number(fields.get('sequenceNumber'));
  const timestamp = fields.get('timestamp') ?? '';
  if (!Number.isSafeInteger(sequence) || sequence < 0) throw new ReplicationError(`${what} has no valid sequenceNumber`);
  if (Number.isNaN(Date.parse(timestamp))) throw new ReplicationError(`${what} has no valid timestamp`);
  return { sequence, timestamp };
}

/** `1234567` → `001/234/567`. */
export function sequencePath(sequence: number): string {
  const digits = String(sequence).padStart(9, '0');
  return `${digits.slice(0, 3)}/${digits.slice(3, 6)}/${digits.slice(6, 9)}`;
}

interface Answer {
  status: number;
  body: Buffer;
}

/** One guarded GET: the body of a 200 answer, at most `maxBytes`, within `timeoutMs`; of any other answer only its status. */
async function get(url: string, options: FeedOptions, maxBytes: number): Promise<Answer> {
  let guarded: Awaited<ReturnType<typeof guardTarget>>;
  try {
    guarded = await guardTarget(url, { allowPrivate: options.allowPrivate });
  } catch (error) {
    // A refused address or an unresolvable name is how the feed is configured, not a passing failure.
    throw new ReplicationError(`cannot reach ${url}: ${(error as Error).message}`);
  }
  const { target, host, lookup } = guarded;
  return new Promise((resolve, reject) => {
    const fail = (message: string) => reject(new TransientFeedError(`${url}: ${message}`));
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      { method: 'GET', host, port: target.port || undefined, path: `${target.pathname}${target.search}`, lookup, agent: false },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          clearTimeout(timer);
          res.destroy();
          resolve({ status, body: Buffer.alloc(0) });
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            clearTimeout(timer);
            req.destroy();
            reject(new ReplicationError(`${url} is larger than FOLLOW_MAX_FILE_BYTES (${maxBytes} bytes)`));
          } else parts.push(chunk);
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status, body: Buffer.concat(parts) });
        });
        res.on('error', (error) => fail(error.message));
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no complete answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    timer.unref();
    req.on('error', (error) => {
      clearTimeout(timer);
      fail(error.message);
    });
    req.end();
  });
}

const STATE_BYTES = 64 * 1024;

/** A replication directory by its base URL (with or without the trailing slash). */
export class ReplicationFeed {
  private readonly base: string;

  constructor(
    url: string,
    private readonly options: FeedOptions,
  ) {
    this.base = url.endsWith('/') ? url : `${url}/`;
  }

  get url(): string {
    return this.base;
  }

  /** The newest change file the feed has. */
  async state(): Promise<ReplicationState> {
    const url = `${this.base}state.txt`;
    const answer = await get(url, this.options, STATE_BYTES);
    if (answer.status !== 200) throw statusError(url, answer.status);
    return parseState(answer.body.toString('utf8'), url);
  }

  /**
   * Change file `sequence`, decompressed, with its state, checked: its state must name that sequence (a feed
   * serving another file under its number is out of order), and the file must be whole gzip. A file the
   * feed's state promises but that is missing is a gap.
   */
  async changeFile(sequence: number): Promise<{ state: ReplicationState; osc: Buffer }> {
    const path = sequencePath(sequence);
    const stateUrl = `${this.base}${path}.state.txt`;
    const fileUrl = `${this.base}${path}.osc.gz`;
    const stateAnswer = await get(stateUrl, this.options, STATE_BYTES);
    if (stateAnswer.status === 404) throw new ReplicationError(`gap in the feed: change file ${sequence} has no state (${stateUrl}: 404)`);
    if (stateAnswer.status !== 200) throw statusError(stateUrl, stateAnswer.status);
    const state = parseState(stateAnswer.body.toString('utf8'), stateUrl);
    if (state.sequence !== sequence)
      throw new ReplicationError(`sequence out of order: ${stateUrl} names sequence ${state.sequence}, not ${sequence}`);
    const answer = await get(fileUrl, this.options, this.options.maxFileBytes);
    if (answer.status === 404) throw new ReplicationError(`gap in the feed: change file ${sequence} is missing (${fileUrl}: 404)`);
    if (answer.status !== 200) throw statusError(fileUrl, answer.status);
    let osc: Buffer;
    try {
      osc = gunzipSync(answer.body, { maxOutputLength: this.options.maxFileBytes });
    } catch (error) {
      throw new ReplicationError(`corrupt change file ${sequence} (${fileUrl}): ${(error as Error).message}`);
    }
    return { state, osc };
  }
}

/** A 5xx or 429 may pass; any other status says the feed is not what it should be. */
function statusError(url: string, status: number): Error {
  if (status >= 500 || status === 429 || status === 0) return new TransientFeedError(`${url}: HTTP ${status}`);
  return new ReplicationError(`${url}: HTTP ${status}`);
}
