import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError, type FieldError } from '../../infra/errors.ts';
import { registrableDomain } from '../../infra/web-domain.ts';
import { normalisePhone } from '../geo/phone.ts';
import {
  commitUpload,
  deleteAllEntries,
  deleteEntry,
  discardStaleUploads,
  discardUpload,
  findListState,
  listEntries,
  type SuppressionEntry,
  stageEntries,
} from './suppressions.repository.ts';
import {
  type Deleted,
  listedRejections,
  maxCsvBytes,
  maxCsvEntries,
  type SuppressionKind,
  type SuppressionsAdded,
  type SuppressionsBody,
  type SuppressionsListQuery,
  type SuppressionsPage,
  suppressionKinds,
  suppressionsPerPage,
} from './suppressions.schema.ts';

const placeIdPattern = /^plc_[a-z2-7]{16}$/;
const emailPattern = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
/** What a phone number is written with: digits, a leading +, spaces and the usual punctuation. */
const phonePattern = /^\+?[\d\s().\-/]+$/;

/** An entry as the client wrote it. */
export interface RawEntry {
  type?: SuppressionKind;
  value: string;
  country?: string;
}

export type Normalised = { ok: true; entry: SuppressionEntry } | { ok: false; message: string };

/** The type of an untyped value: a place id, an email, a phone number (digits and punctuation only), else a domain. */
export function detectKind(value: string): SuppressionKind {
  const v = value.trim();
  if (placeIdPattern.test(v)) return 'place';
  if (emailPattern.test(v.replace(/^mailto:/i, ''))) return 'email';
  if (phonePattern.test(v) && /\d/.test(v)) return 'phone';
  return 'domain';
}

/**
 * The key a place is matched by: E.164 for a phone (national numbers need the country), the registrable
 * domain of a website or domain, the lower-case address of an email, the id of a place.
 */
export function normaliseEntry(raw: RawEntry, defaultCountry: string | undefined): Normalised {
  const value = raw.value.trim();
  if (value === '') return { ok: false, message: 'is empty' };
  if (value.length > 320) return { ok: false, message: 'is longer than 320 characters' };
  const kind = raw.type ?? detectKind(value);
  switch (kind) {
    case 'phone': {
      const country = (raw.country ?? defaultCountry)?.toUpperCase() ?? null;
      const key = normalisePhone(value, country);
      if (key) return { ok: true, entry: { kind, key, value } };
      return {
        ok: false,
        message:
          country || value.startsWith('+') || value.startsWith('00')
            ? `is not a valid phone number${country ? ` in ${country}` : ''}`
            : 'is not a valid international phone number: write it with its +country code, or give its country',
      };
    }
    case 'domain': {
      const key = registrableDomain(value);
      return key
        ? { ok: true, entry: { kind, key, value } }
        : { ok: false, message: 'is not a phone number, website, domain, email address or place id' };
    }
    case 'email': {
      const address = value.replace(/^mailto:/i, '').toLowerCase();
      return emailPattern.test(address)
        ? { ok: true, entry: { kind, key: address, value } }
        : { ok: false, message: 'is not an email address' };
    }
    case 'place':
      return placeIdPattern.test(value)
        ? { ok: true, entry: { kind, key: value, value } }
        : { ok: false, message: 'is not a place id (plc_ and 16 letters or digits 2-7)' };
  }
}

async function countsOf(db: Db, accountId: number): Promise<SuppressionsAdded['counts']> {
  const state = await findListState(db, accountId);
  const c = state?.counts ?? { phone: 0, domain: 0, email: 0, place: 0 };
  return { ...c, total: c.phone + c.domain + c.email + c.place };
}

/** Entries staged a batch at a time, then committed together (see `commitUpload`). */
const stageBatch = 5000;
/** Uploads older than this that never finished are garbage (a crash, a kill). */
const staleUploadMs = 24 * 3600 * 1000;

class Upload {
  readonly id = `upl_${randomBytes(12).toString('base64url')}`;
  private pending: SuppressionEntry[] = [];
  private seq = 0;
  received = 0;
  rejected = 0;
  readonly rejections: SuppressionsAdded['rejected_entries'] = [];

  constructor(
    private readonly db: Db,
    readonly accountId: number,
    private readonly at: string,
  ) {}

  async add(raw: RawEntry, at: string, defaultCountry: string | undefined): Promise<void> {
    this.received++;
    const n = normaliseEntry(raw, defaultCountry);
    if (!n.ok) {
      this.rejected++;
      if (this.rejections.length < listedRejections) this.rejections.push({ at, value: raw.value.slice(0, 320), message: n.message });
      return;
    }
    this.pending.push(n.entry);
    if (this.pending.length >= stageBatch) await this.flush();
  }

  reject(at: string, value: string, message: string): void {
    this.received++;
    this.rejected++;
    if (this.rejections.length < listedRejections) this.rejections.push({ at, value: value.slice(0, 320), message });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    await stageEntries(this.db, { id: this.id, accountId: this.accountId, at: this.at }, this.seq, batch);
    this.seq += batch.length;
  }

  /** Commits the staged entries (or, with rejections in `reject` mode, refuses them all). */
  async finish(onInvalid: 'reject' | 'skip', field: string): Promise<SuppressionsAdded> {
    if (this.rejected > 0 && onInvalid === 'reject') {
      await discardUpload(this.db, this.id);
      throw new AppError(
        'validation_failed',
        `${this.rejected} of ${this.received} entries are not valid: nothing was added (on_invalid=skip adds the others)`,
        {
          errors: this.rejections.map(
            (r): FieldError => ({ field: `${field}.${r.at}`, message: `${JSON.stringify(r.value)} ${r.message}` }),
          ),
          rejected: this.rejected,
        },
      );
    }
    await this.flush();
    const added = await commitUpload(this.db, this.id, this.accountId, new Date().toISOString());
    return {
      received: this.received,
      added,
      duplicates: this.received - this.rejected - added,
      rejected: this.rejected,
      rejected_entries: this.rejections,
      counts: await countsOf(this.db, this.accountId),
    };
  }

  async abandon(): Promise<void> {
    await discardUpload(this.db, this.id);
  }
}

async function startUpload(db: Db, accountId: number): Promise<Upload> {
  const now = new Date();
  await discardStaleUploads(db, accountId, new Date(now.getTime() - staleUploadMs).toISOString());
  return new Upload(db, accountId, now.toISOString());
}

/** Adds the entries of a JSON body: all of them, or (any invalid, `reject`) none. */
export async function addSuppressions(
  db: Db,
  accountId: number,
  body: SuppressionsBody,
  onInvalid: 'reject' | 'skip' = 'reject',
): Promise<SuppressionsAdded> {
  const upload = await startUpload(db, accountId);
  try {
    for (const [i, e] of body.entries.entries()) await upload.add(typeof e === 'string' ? { value: e } : e, `entries[${i}]`, body.country);
    return await upload.finish(onInvalid, 'body');
  } catch (error) {
    await upload.abandon();
    throw error;
  }
}

const headerNames: Record<string, 'type' | 'value' | 'country'> = { type: 'type', kind: 'type', value: 'value', country: 'country' };
/** A one-column header that names the type of every line (`phone`, `email`…). */
const typeHeaders: Record<string, SuppressionKind> = {
  phone: 'phone',
  phones: 'phone',
  telephone: 'phone',
  domain: 'domain',
  domains: 'domain',
  website: 'domain',
  websites: 'domain',
  email: 'email',
  emails: 'email',
  place: 'place',
  places: 'place',
  place_id: 'place',
  id: 'place',
};

/**
 * Adds the entries of a CSV body, read as it arrives (memory stays at a staged batch whatever the
 * length). Lines: a value (its type detected), or `type,value[,country]`; a first line naming the columns
 * (`type,value,country`, in any order) or the type of every line (`phone`) is a header.
 */
export async function uploadSuppressionsCsv(
  db: Db,
  accountId: number,
  body: Readable,
  options: { country?: string; onInvalid?: 'reject' | 'skip' },
): Promise<SuppressionsAdded> {
  let bytes = 0;
  const limited = new AppError(
    'payload_too_large',
    `A CSV upload may carry at most ${maxCsvBytes / 1024 / 1024} MB and ${maxCsvEntries.toLocaleString('en')} entries`,
  );
  let tooLarge = false;
  // The body's listeners come before anything is awaited: an error of the body in the meantime (a client
  // gone, a multipart file part cut short) would otherwise be missed and the parser wait for ever.
  let bodyError: unknown;
  body.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > maxCsvBytes && !tooLarge) {
      tooLarge = true;
      body.destroy(limited);
    }
  });
  const parser = body.pipe(
    parse({ bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, trim: true, info: false }),
  );
  const onBodyError = (error: unknown) => {
    bodyError ??= error;
    parser.destroy(error as Error);
  };
  body.once('error', onBodyError);
  // Until the loop below reads the parser, its error is kept (the loop then throws it), not thrown unhandled.
  parser.on('error', () => undefined);
  if (body.errored) onBodyError(body.errored);
  let upload: Upload;
  try {
    upload = await startUpload(db, accountId);
  } catch (error) {
    body.resume();
    throw error;
  }
  try {
    let columns: { type: number; value: number; country: number } | null = null;
    let typeForAll: SuppressionKind | undefined;
    let line = 0;
    for await (const record of parser as AsyncIterable<string[]>) {
      line++;
      const at = `line ${line}`;
      if (line === 1) {
        const names = record.map((c) => c.toLowerCase());
        if (names.includes('value')) {
          columns = {
            type: names.findIndex((n) => headerNames[n] === 'type'),
            value: names.findIndex((n) => n === 'value'),
            country: names.indexOf('country'),
          };
          continue;
        }
        if (names.length === 1 && typeHeaders[names[0]!]) {
          typeForAll = typeHeaders[names[0]!];
          continue;
        }
      }
      if (upload.received >= maxCsvEntries) throw limited;
      let raw: RawEntry;
      if (columns) {
        const type = columns.type >= 0 ? record[columns.type]?.toLowerCase() : undefined;
        if (type && !(suppressionKinds as readonly string[]).includes(type)) {
          upload.reject(at, record.join(','), `has type "${type}": allowed ${suppressionKinds.join(', ')}`);
          continue;
        }
        raw = {
          value: record[columns.value] ?? '',
          type: (type || typeForAll) as SuppressionKind | undefined,
          country: columns.country >= 0 ? record[columns.country] || undefined : undefined,
        };
      } else if (record.length === 1) {
        raw = { value: record[0]!, type: typeForAll };
      } else {
        const type = record[0]!.toLowerCase();
        if (!(suppressionKinds as readonly string[]).includes(type) || record.length > 3) {
          upload.reject(at, record.join(','), `must be a value, or type,value[,country] with a type of ${suppressionKinds.join(', ')}`);
          continue;
        }
        raw = { type: type as SuppressionKind, value: record[1]!, country: record[2] || undefined };
      }
      if (raw.country !== undefined && !/^[A-Za-z]{2}$/.test(raw.country)) {
        upload.reject(at, raw.value, `has country "${raw.country}": an ISO 3166-1 alpha-2 code is expected`);
        continue;
      }
      await upload.add(raw, at, options.country);
    }
    if (upload.received === 0) {
      throw new AppError('validation_failed', 'The CSV has no entries', {
        errors: [{ field: 'body', message: 'has no entries: one value a line, or type,value[,country]' }],
      });
    }
    return await upload.finish(options.onInvalid ?? 'reject', 'body');
  } catch (error) {
    await upload.abandon();
    if (tooLarge) throw limited;
    if (error instanceof AppError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: string }).code ?? '';
    if (code.startsWith('CSV_')) {
      throw new AppError('validation_failed', `The CSV cannot be read: ${message}`, { errors: [{ field: 'body', message }] });
    }
    if (
      code === 'ECONNRESET' ||
      code === 'ERR_STREAM_PREMATURE_CLOSE' ||
      message === 'aborted' ||
      (bodyError !== undefined && error === bodyError)
    ) {
      // The client went away mid-upload: nothing was added, and the answer (if it can still be read) says so.
      throw new AppError('validation_failed', 'The upload ended before its end: nothing was added', {
        errors: [{ field: 'body', message: 'was cut short' }],
      });
    }
    throw error;
  } finally {
    body.resume();
  }
}

export async function listSuppressions(db: Db, accountId: number, query: SuppressionsListQuery): Promise<SuppressionsPage> {
  const perPage = query.per_page ?? suppressionsPerPage.default;
  const afterId =
    query.cursor === undefined
      ? 0
      : decodeCursor(query.cursor, (v) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : undefined), {
          field: 'querystring.cursor',
          message: 'pass the next_cursor of the previous page unchanged',
        });
  const [rows, counts] = await Promise.all([
    listEntries(db, accountId, { afterId, limit: perPage + 1, kind: query.type }),
    countsOf(db, accountId),
  ]);
  const page = rows.slice(0, perPage);
  return {
    data: page.map((r) => ({ id: r.id, type: r.kind, value: r.value, key: r.key, created_at: r.created_at })),
    counts,
    per_page: perPage,
    next_cursor: rows.length > perPage ? encodeCursor(page.at(-1)!.id) : null,
  };
}

/** Removes one entry; `not_found` for an id the account has no entry with (another account's included). */
export async function removeSuppression(db: Db, accountId: number, id: number): Promise<Deleted> {
  if (!(await deleteEntry(db, accountId, id, new Date().toISOString())))
    throw new AppError('not_found', `suppression ${id} does not exist`);
  return { deleted: 1, counts: await countsOf(db, accountId) };
}

export async function removeAllSuppressions(db: Db, accountId: number): Promise<Deleted> {
  const deleted = await deleteAllEntries(db, accountId, new Date().toISOString());
  return { deleted, counts: await countsOf(db, accountId) };
}
