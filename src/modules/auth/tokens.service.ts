import { timingSafeEqual } from 'node:crypto';
import type { Db } from '../../infra/db/database.ts';
import { AppError, type FieldError } from '../../infra/errors.ts';
import { type AuthContext, scopes as knownScopes, type Scope } from './auth.types.ts';
import { generateToken, hashToken, isWellFormedToken } from './token-format.ts';
import * as repo from './tokens.repository.ts';

export const defaultExpiryDays = 90;
export const maxExpiryDays = 365;
export const maxGraceSeconds = 7 * 86400;
export const tokenNameMaxLength = 100;

export type TokenStatus = 'active' | 'rotating' | 'expired' | 'revoked';

/** A token as the dashboard lists it; never carries the value or its hash. */
export interface TokenRecord {
  id: number;
  name: string;
  /** `la_pat_` + the first random characters: enough to recognise a token, useless to use it. */
  displayPrefix: string;
  scopes: Scope[];
  createdAt: string;
  /** Null: never expires. */
  expiresAt: string | null;
  lastUsedAt: string | null;
  lastUsedIp: string | null;
  revokedAt: string | null;
  /** The token that replaced this one by rotation. */
  rotatedToId: number | null;
  /** When a rotated token stops working. */
  graceUntil: string | null;
  /** `rotating`: replaced but still inside its grace period. */
  status: TokenStatus;
}

export interface CreateTokenInput {
  accountId: number;
  name: string;
  scopes: readonly string[];
  /** Days until expiry, 1 to 365; null for a token that never expires; omitted for 90. */
  expiresInDays?: number | null;
}

export type VerifyFailure = 'malformed' | 'unknown' | 'expired' | 'revoked';
/** On success, `tokenHash` lets a caller that keeps the presented value re-check it with `verifyHashNow`. */
export type VerifyResult = { ok: true; auth: AuthContext; tokenHash: string } | { ok: false; reason: VerifyFailure };

const digestScratch = Buffer.alloc(32);
const malformed: VerifyResult = Object.freeze({ ok: false, reason: 'malformed' });

interface CachedToken {
  id: number;
  tokenHash: Buffer;
  /** Built once per lookup and shared by the requests that use the token meanwhile (read-only). */
  auth: Readonly<AuthContext>;
  expiresAt: number | null;
  revoked: boolean;
  graceUntil: number | null;
  fetchedAt: number;
}

export interface TokenServiceOptions {
  now?: () => Date;
  /** How long a looked-up token is trusted without asking the database again (other processes' revocations). */
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  /** Minimum time between two writes of a token's last use. */
  lastUseWriteIntervalMs?: number;
  /** Called when recording a last use fails; the request itself goes on. */
  onBackgroundError?: (error: unknown) => void;
}

/**
 * How long a looked-up token is trusted without asking the database again. A token revoked or rotated on
 * another node (or by the CLI) is refused everywhere within this time, with or without Redis: one
 * indexed look-up per token, node and second is the price, and it keeps revocation independent of
 * anything but the database.
 */
export const tokenCacheTtlMs = 1000;

/**
 * Personal access tokens: creation (value shown once), listing, revocation, rotation with a grace
 * period, and verification. Verification is made cheap for every API request: the checksum rejects
 * garbage without touching the database, looked-up tokens are cached in process for a second
 * (revocation and rotation here evict them at once), and the last use is written at most once a
 * minute per token.
 */
export class TokenService {
  private readonly now: () => Date;
  private readonly nowMs: () => number;
  private readonly cacheTtlMs: number;
  private readonly cacheMaxEntries: number;
  private readonly lastUseWriteIntervalMs: number;
  private readonly onBackgroundError: (error: unknown) => void;
  /** Keyed by token hash; a Map keeps insertion order, so the oldest entry is evicted first. */
  private readonly cache = new Map<string, CachedToken>();
  private readonly lastUseWrites = new Map<number, number>();
  private readonly pendingWrites = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    options: TokenServiceOptions = {},
  ) {
    const now = options.now;
    this.now = now ?? (() => new Date());
    this.nowMs = now ? () => now().getTime() : Date.now;
    this.cacheTtlMs = options.cacheTtlMs ?? tokenCacheTtlMs;
    this.cacheMaxEntries = options.cacheMaxEntries ?? 10_000;
    this.lastUseWriteIntervalMs = options.lastUseWriteIntervalMs ?? 60_000;
    this.onBackgroundError = options.onBackgroundError ?? (() => {});
  }

  /** Creates a token and returns its value, which is never retrievable again. */
  async createToken(input: CreateTokenInput): Promise<{ token: string; record: TokenRecord }> {
    const { name, scopes, expiresInDays } = validateCreate(input);
    const now = this.now();
    return this.insert(input.accountId, name, scopes, expiresInDays === null ? null : addDays(now, expiresInDays), now);
  }

  async listTokens(accountId: number): Promise<TokenRecord[]> {
    const now = this.now();
    return (await repo.listAccountTokens(this.db.kysely, accountId)).map((r) => toRecord(r, now));
  }

  async getToken(accountId: number, tokenId: number): Promise<TokenRecord> {
    return toRecord(await this.owned(accountId, tokenId), this.now());
  }

  /** Revokes a token of this account at once (also ending a rotated token's grace period). */
  async revokeToken(accountId: number, tokenId: number): Promise<TokenRecord> {
    const row = await this.owned(accountId, tokenId);
    await repo.markRevoked(this.db.kysely, row.id, this.now().toISOString());
    this.cache.delete(row.token_hash);
    return this.getToken(accountId, tokenId);
  }

  /**
   * Replaces an active token by a new one with the same name, scopes and lifetime. The old value
   * keeps working for `graceSeconds` (0 to 7 days) so deployments can swap it.
   */
  async rotateToken(
    accountId: number,
    tokenId: number,
    graceSeconds: number,
  ): Promise<{ token: string; record: TokenRecord; previous: TokenRecord }> {
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > maxGraceSeconds) {
      throw invalid([
        {
          field: 'grace_seconds',
          message: `must be a whole number of seconds from 0 to ${maxGraceSeconds}`,
          allowed: { minimum: 0, maximum: maxGraceSeconds },
        },
      ]);
    }
    const old = await this.owned(accountId, tokenId);
    const now = this.now();
    const status = toRecord(old, now).status;
    if (status !== 'active') throw new AppError('conflict', `Token ${tokenId} is ${status} and cannot be rotated`, { status });
    const lifetimeDays =
      old.expires_at === null
        ? null
        : Math.min(maxExpiryDays, Math.max(1, Math.round((Date.parse(old.expires_at) - Date.parse(old.created_at)) / 86_400_000)));
    const created = await this.db.kysely.transaction().execute(async (trx) => {
      const fresh = generateToken();
      const row = await repo.insertToken(
        trx,
        newRow(accountId, old.name, parseScopes(old.scopes), lifetimeDays === null ? null : addDays(now, lifetimeDays), now, fresh),
      );
      await repo.markRotated(trx, old.id, row.id, new Date(now.getTime() + graceSeconds * 1000).toISOString());
      return { token: fresh.token, row };
    });
    this.cache.delete(old.token_hash);
    return { token: created.token, record: toRecord(created.row, now), previous: await this.getToken(accountId, tokenId) };
  }

  /**
   * Checks a presented token. The format and checksum are checked before any lookup; the stored
   * hash is compared in constant time. Records the last use (time and IP), at most once a minute.
   */
  async verifyToken(raw: string, ip: string | null = null): Promise<VerifyResult> {
    if (!isWellFormedToken(raw)) return malformed;
    const hash = hashToken(raw);
    const nowMs = this.nowMs();
    return this.judge(await this.lookup(hash, nowMs), hash, nowMs, ip);
  }

  /**
   * The same answer as `verifyToken` without waiting, when it needs no database lookup (a malformed
   * token, or one looked up in the last few seconds); undefined otherwise. Lets the request hook
   * skip promise hops on the common path.
   */
  verifyTokenNow(raw: string, ip: string | null = null): VerifyResult | undefined {
    if (!isWellFormedToken(raw)) return malformed;
    return this.verifyHashNow(hashToken(raw), ip);
  }

  /**
   * `verifyTokenNow` for a value whose hash an earlier successful verification returned, sparing
   * the SHA-256 (the costliest step) when a connection presents the same token again. Undefined
   * once the token has left the cache: revoked or rotated here, or older than the cache TTL.
   */
  verifyHashNow(hash: string, ip: string | null = null): VerifyResult | undefined {
    const nowMs = this.nowMs();
    const cached = this.cache.get(hash);
    if (!cached || nowMs - cached.fetchedAt >= this.cacheTtlMs) return undefined;
    return this.judge(cached, hash, nowMs, ip);
  }

  private judge(token: CachedToken | null, hash: string, nowMs: number, ip: string | null): VerifyResult {
    if (!token) return { ok: false, reason: 'unknown' };
    // Decoded into a reused buffer: no allocation per request (verification is synchronous from here).
    digestScratch.write(hash, 'hex');
    if (!timingSafeEqual(token.tokenHash, digestScratch)) return { ok: false, reason: 'unknown' };
    if (token.revoked || (token.graceUntil !== null && nowMs >= token.graceUntil)) return { ok: false, reason: 'revoked' };
    if (token.expiresAt !== null && nowMs >= token.expiresAt) return { ok: false, reason: 'expired' };
    this.noteUse(token.id, nowMs, ip);
    return { ok: true, auth: token.auth, tokenHash: hash };
  }

  /** Waits for the last-use writes in flight. */
  async settle(): Promise<void> {
    await Promise.all([...this.pendingWrites]);
  }

  /** Settles writes and forgets cached tokens; call before closing the database. */
  async close(): Promise<void> {
    await this.settle();
    this.cache.clear();
  }

  private async lookup(hash: string, nowMs: number): Promise<CachedToken | null> {
    const cached = this.cache.get(hash);
    if (cached && nowMs - cached.fetchedAt < this.cacheTtlMs) return cached;
    const row = await repo.findTokenByHash(this.db.kysely, hash);
    if (!row) {
      this.cache.delete(hash);
      return null;
    }
    const entry: CachedToken = {
      id: Number(row.id),
      tokenHash: Buffer.from(row.token_hash, 'hex'),
      auth: Object.freeze({
        accountId: Number(row.account_id),
        tokenId: Number(row.id),
        scopes: new Set(parseScopes(row.scopes)),
        via: 'token' as const,
      }),
      expiresAt: row.expires_at === null ? null : Date.parse(row.expires_at),
      revoked: row.revoked_at !== null,
      graceUntil: row.grace_until === null ? null : Date.parse(row.grace_until),
      fetchedAt: nowMs,
    };
    this.cache.delete(hash);
    if (this.cache.size >= this.cacheMaxEntries) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, entry);
    return entry;
  }

  private noteUse(tokenId: number, nowMs: number, ip: string | null): void {
    const last = this.lastUseWrites.get(tokenId);
    if (last !== undefined && nowMs - last < this.lastUseWriteIntervalMs) return;
    this.lastUseWrites.set(tokenId, nowMs);
    const write = repo
      .recordLastUse(this.db.kysely, tokenId, new Date(nowMs).toISOString(), ip)
      .catch(this.onBackgroundError)
      .finally(() => this.pendingWrites.delete(write));
    this.pendingWrites.add(write);
  }

  private async owned(accountId: number, tokenId: number): Promise<repo.TokenRow> {
    const row = Number.isSafeInteger(tokenId) ? await repo.findAccountToken(this.db.kysely, accountId, tokenId) : undefined;
    // Another account's token is reported exactly like a missing one.
    if (!row) throw new AppError('not_found', `Token ${tokenId} does not exist`);
    return row;
  }

  private async insert(
    accountId: number,
    name: string,
    scopes: Scope[],
    expiresAt: Date | null,
    now: Date,
  ): Promise<{ token: string; record: TokenRecord }> {
    const fresh = generateToken();
    const row = await repo.insertToken(this.db.kysely, newRow(accountId, name, scopes, expiresAt, now, fresh));
    return { token: fresh.token, record: toRecord(row, now) };
  }
}

function newRow(
  accountId: number,
  name: string,
  scopes: Scope[],
  expiresAt: Date | null,
  now: Date,
  fresh: ReturnType<typeof generateToken>,
) {
  return {
    account_id: accountId,
    name,
    display_prefix: fresh.displayPrefix,
    token_hash: fresh.hash,
    scopes: JSON.stringify(scopes),
    created_at: now.toISOString(),
    expires_at: expiresAt?.toISOString() ?? null,
    last_used_at: null,
    last_used_ip: null,
    revoked_at: null,
    rotated_to_id: null,
    grace_until: null,
  };
}

/** Validates creation input; every bad field is reported with what is allowed. */
export function validateCreate(input: CreateTokenInput): { name: string; scopes: Scope[]; expiresInDays: number | null } {
  const errors: FieldError[] = [];
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name.length < 1 || name.length > tokenNameMaxLength)
    errors.push({ field: 'name', message: `must be 1 to ${tokenNameMaxLength} characters long` });
  const requested = Array.isArray(input.scopes) ? input.scopes : [];
  const unknown = requested.filter((s) => !(knownScopes as readonly string[]).includes(s));
  if (requested.length === 0 || unknown.length > 0) {
    errors.push({
      field: 'scopes',
      message: unknown.length > 0 ? `unknown scope ${unknown.map((s) => JSON.stringify(s)).join(', ')}` : 'at least one scope is required',
      allowed: knownScopes,
    });
  }
  const days = input.expiresInDays === undefined ? defaultExpiryDays : input.expiresInDays;
  if (days !== null && (!Number.isInteger(days) || days < 1 || days > maxExpiryDays)) {
    errors.push({
      field: 'expires_in_days',
      message: `must be a whole number of days from 1 to ${maxExpiryDays}, or no expiry`,
      allowed: { minimum: 1, maximum: maxExpiryDays },
    });
  }
  if (errors.length > 0) throw invalid(errors);
  // Keep the catalogue order so equal grants read the same.
  const scopes = knownScopes.filter((s) => requested.includes(s));
  return { name, scopes, expiresInDays: days };
}

function invalid(errors: FieldError[]): AppError {
  return new AppError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
}

function parseScopes(json: string): Scope[] {
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? knownScopes.filter((s) => parsed.includes(s)) : [];
}

function addDays(from: Date, days: number): Date {
  return new Date(from.getTime() + days * 86_400_000);
}

function toRecord(row: repo.TokenRow, now: Date): TokenRecord {
  const nowIso = now.toISOString();
  let status: TokenStatus = 'active';
  if (row.revoked_at !== null || (row.grace_until !== null && row.grace_until <= nowIso)) status = 'revoked';
  else if (row.expires_at !== null && row.expires_at <= nowIso) status = 'expired';
  else if (row.rotated_to_id !== null) status = 'rotating';
  return {
    id: Number(row.id),
    name: row.name,
    displayPrefix: row.display_prefix,
    scopes: parseScopes(row.scopes),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    lastUsedIp: row.last_used_ip,
    revokedAt: row.revoked_at,
    rotatedToId: row.rotated_to_id === null ? null : Number(row.rotated_to_id),
    graceUntil: row.grace_until,
    status,
  };
}
