import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../infra/db/database.ts';
import { AppError, type FieldError } from '../../infra/errors.ts';
import type { RateLimiter } from '../../infra/ratelimit/ratelimit.ts';
import * as repo from './accounts.repository.ts';
import { hashPassword, passwordMaxLength, passwordMinLength, spendVerifyTime, verifyPassword } from './passwords.ts';

export interface Account {
  id: number;
  email: string;
  createdAt: string;
}

export interface Session {
  accountId: number;
  email: string;
  /** Every state-changing dashboard form carries it; check with `verifyCsrf`. */
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

/** Sign-in throttles: per account and IP (slows guessing one password), per IP (slows spraying many accounts). */
export const loginLimits = {
  perAccountAndIp: { limit: 5, windowSeconds: 60 },
  perIp: { limit: 20, windowSeconds: 60 },
};
/** Sign-up throttles (GCRA: a burst of the limit, then evenly spread over the hour), per IP and for everyone. */
export interface SignUpLimits {
  perIpPerHour: number;
  perHour: number;
}
export const defaultSignUpLimits: SignUpLimits = { perIpPerHour: 5, perHour: 100 };
export const sessionLifetimeDays = 14;
export const sessionCookieName = 'la_session';

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Cookie options for the session cookie: never readable by scripts, never sent cross-site on POST. */
export function sessionCookieOptions(secure: boolean) {
  return { httpOnly: true, secure, sameSite: 'lax' as const, path: '/', maxAge: sessionLifetimeDays * 86400 };
}

export class AccountService {
  constructor(
    private readonly db: Db,
    private readonly rateLimiter: RateLimiter,
    private readonly now: () => Date = () => new Date(),
    private readonly signUpLimits: SignUpLimits = defaultSignUpLimits,
  ) {}

  /**
   * Creates an account; `conflict` when the email is taken, `validation_failed` naming the bad field.
   * A sign-up from the web (`ip` given) is throttled per IP and for everyone before any work is done
   * (`rate_limited` with Retry-After): creating accounts in bulk, or probing which emails have one,
   * goes at a few an hour. An administrator's (the CLI's, `ip` null) is not.
   */
  async signUp(email: string, password: string, ip: string | null): Promise<Account> {
    if (ip !== null) await this.throttleSignUp(ip);
    const errors = [...emailErrors(email, 'email'), ...passwordErrors(password, 'password')];
    if (errors.length > 0) throw new AppError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
    const row = await repo.insertAccount(this.db.kysely, {
      email: email.trim(),
      email_norm: normaliseEmail(email),
      password_hash: await hashPassword(password),
      created_at: this.now().toISOString(),
    });
    if (!row)
      throw new AppError('conflict', 'An account with this email already exists', {
        errors: [{ field: 'email', message: 'is already registered' }],
      });
    return toAccount(row);
  }

  private async throttleSignUp(ip: string): Promise<void> {
    const { perIpPerHour, perHour } = this.signUpLimits;
    for (const [key, limit] of [
      [`signup:ip:${ip}`, perIpPerHour],
      ['signup:all', perHour],
    ] as const) {
      const r = await this.rateLimiter.take(key, limit, 3600);
      if (!r.allowed) {
        const who =
          key === 'signup:all' ? 'Too many accounts are being created right now' : 'Too many accounts were created from this address';
        throw new AppError(
          'rate_limited',
          `${who}; try again in ${formatWait(r.retryAfterSeconds)}`,
          { retry_after: r.retryAfterSeconds },
          { 'retry-after': String(r.retryAfterSeconds) },
        );
      }
    }
  }

  /**
   * Checks email and password, throttled per account+IP and per IP (`rate_limited` with Retry-After).
   * A wrong email and a wrong password give the same `unauthorized` answer in the same time.
   */
  async signIn(email: string, password: string, ip: string): Promise<Account> {
    const emailNorm = normaliseEmail(email);
    const accountKey = `login:acct:${emailNorm}|${ip}`;
    for (const [key, { limit, windowSeconds }] of [
      [`login:ip:${ip}`, loginLimits.perIp],
      [accountKey, loginLimits.perAccountAndIp],
    ] as const) {
      const r = await this.rateLimiter.hit(key, limit, windowSeconds);
      if (!r.allowed) {
        throw new AppError(
          'rate_limited',
          `Too many sign-in attempts; try again in ${r.retryAfterSeconds} seconds`,
          { retry_after: r.retryAfterSeconds },
          { 'retry-after': String(r.retryAfterSeconds) },
        );
      }
    }
    const row = await repo.findAccountByEmailNorm(this.db.kysely, emailNorm);
    if (!row) {
      await spendVerifyTime(password);
      throw badCredentials();
    }
    if (!(await verifyPassword(row.password_hash, password))) throw badCredentials();
    await this.rateLimiter.reset(accountKey);
    return toAccount(row);
  }

  async findByEmail(email: string): Promise<Account | null> {
    const row = await repo.findAccountByEmailNorm(this.db.kysely, normaliseEmail(email));
    return row ? toAccount(row) : null;
  }

  /** Starts a session; `cookieValue` goes into the session cookie and is stored only as a hash. */
  async createSession(accountId: number, client: ClientInfo): Promise<{ cookieValue: string; session: Session }> {
    const account = await repo.findAccountById(this.db.kysely, accountId);
    if (!account) throw new AppError('not_found', `Account ${accountId} does not exist`);
    const cookieValue = randomBytes(32).toString('base64url');
    const now = this.now();
    const row = {
      id_hash: sha256(cookieValue),
      account_id: accountId,
      csrf_token: randomBytes(32).toString('base64url'),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + sessionLifetimeDays * 86_400_000).toISOString(),
      ip: client.ip,
      user_agent: client.userAgent?.slice(0, 512) ?? null,
    };
    await repo.insertSession(this.db.kysely, row);
    // Expired sessions are never read again; each sign-in clears the account's old ones.
    await repo.deleteExpiredSessions(this.db.kysely, accountId, row.created_at);
    return { cookieValue, session: toSession({ ...row, email: account.email }) };
  }

  /** The live session a cookie names, or null (unknown, expired, signed out). */
  async getSession(cookieValue: string | undefined): Promise<Session | null> {
    if (!cookieValue || cookieValue.length > 128) return null;
    const row = await repo.findLiveSession(this.db.kysely, sha256(cookieValue), this.now().toISOString());
    return row ? toSession(row) : null;
  }

  async destroySession(cookieValue: string | undefined): Promise<void> {
    if (cookieValue) await repo.deleteSession(this.db.kysely, sha256(cookieValue));
  }

  /**
   * Changes the password after checking the current one, and signs out every other session
   * (`keepCookieValue` is the session making the change).
   */
  async changePassword(
    accountId: number,
    currentPassword: string,
    newPassword: string,
    keepCookieValue: string | null = null,
  ): Promise<void> {
    const errors = passwordErrors(newPassword, 'new_password');
    if (errors.length > 0) throw new AppError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
    const row = await repo.findAccountById(this.db.kysely, accountId);
    if (!row) throw new AppError('not_found', `Account ${accountId} does not exist`);
    if (!(await verifyPassword(row.password_hash, currentPassword))) {
      throw new AppError('validation_failed', 'current_password: is not correct', {
        errors: [{ field: 'current_password', message: 'is not correct' }],
      });
    }
    await repo.updatePasswordHash(this.db.kysely, accountId, await hashPassword(newPassword), this.now().toISOString());
    await repo.deleteOtherSessions(this.db.kysely, accountId, keepCookieValue ? sha256(keepCookieValue) : null);
  }
}

/** Constant-time check of a submitted CSRF token against the session's. */
export function verifyCsrf(session: Session, submitted: unknown): boolean {
  if (typeof submitted !== 'string') return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function emailErrors(email: unknown, field: string): FieldError[] {
  if (typeof email !== 'string' || email.trim() === '') return [{ field, message: 'is required' }];
  if (email.trim().length > 254 || !emailPattern.test(email.trim()))
    return [{ field, message: 'must be an email address like name@example.com' }];
  return [];
}

export function passwordErrors(password: unknown, field: string): FieldError[] {
  if (typeof password !== 'string' || password.length < passwordMinLength || password.length > passwordMaxLength) {
    return [
      {
        field,
        message: `must be ${passwordMinLength} to ${passwordMaxLength} characters long`,
        allowed: { minLength: passwordMinLength, maxLength: passwordMaxLength },
      },
    ];
  }
  return [];
}

function formatWait(seconds: number): string {
  return seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
}

function badCredentials(): AppError {
  return new AppError('unauthorized', 'The email or password is not correct', { reason: 'bad_credentials' });
}

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

function toAccount(row: repo.AccountRow): Account {
  return { id: Number(row.id), email: row.email, createdAt: row.created_at };
}

function toSession(row: repo.SessionRow & { email: string }): Session {
  return {
    accountId: Number(row.account_id),
    email: row.email,
    csrfToken: row.csrf_token,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
