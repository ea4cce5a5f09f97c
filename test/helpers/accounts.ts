import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/infra/db/database.ts';
import type { Scope } from '../../src/modules/auth/auth.types.ts';
import { scopes as allScopes } from '../../src/modules/auth/auth.types.ts';
import { hashPassword } from '../../src/modules/auth/passwords.ts';
import { TokenService } from '../../src/modules/auth/tokens.service.ts';

export interface TestAccount {
  accountId: number;
  email: string;
  /** The password every test account gets. */
  password: string;
  /** `Bearer …` ready for the Authorization header. */
  authorization: string;
  token: string;
  tokenId: number;
}

export const testPassword = 'test password, long enough';
let passwordHash: Promise<string> | undefined;

/**
 * A new account (unique email) with one token. The argon2id hash is computed once per process, so
 * creating many accounts stays cheap.
 */
export async function createAccountWithToken(
  db: Db,
  options: { scopes?: readonly Scope[]; expiresInDays?: number | null; email?: string } = {},
): Promise<TestAccount> {
  passwordHash ??= hashPassword(testPassword);
  const email = options.email ?? `user-${randomBytes(6).toString('hex')}@example.com`;
  const now = new Date().toISOString();
  const account = await db.kysely
    .insertInto('accounts')
    .values({ email, email_norm: email.toLowerCase(), password_hash: await passwordHash, created_at: now, password_changed_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const accountId = Number(account.id);
  const { token, record } = await new TokenService(db).createToken({
    accountId,
    name: 'test token',
    scopes: options.scopes ?? allScopes,
    expiresInDays: options.expiresInDays,
  });
  return { accountId, email, password: testPassword, authorization: `Bearer ${token}`, token, tokenId: record.id };
}
