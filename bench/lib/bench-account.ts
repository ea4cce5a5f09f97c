import { openDatabase } from '../../src/infra/db/database.ts';
import { scopes } from '../../src/modules/auth/auth.types.ts';
import { TokenService } from '../../src/modules/auth/tokens.service.ts';

/** A bench account with a token in the database at `url`: its id and the Authorization header. */
export async function credentials(url: string): Promise<{ accountId: number; authorization: string }> {
  const target = openDatabase(url);
  try {
    const now = new Date().toISOString();
    const email = `bench-${Date.now()}@example.com`;
    const account = await target.kysely
      .insertInto('accounts')
      .values({
        email,
        email_norm: email,
        password_hash: 'unused: the benchmark authenticates with a token',
        created_at: now,
        password_changed_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const tokens = new TokenService(target);
    const { token } = await tokens.createToken({ accountId: Number(account.id), name: 'bench', scopes: [...scopes], expiresInDays: 1 });
    await tokens.close();
    return { accountId: Number(account.id), authorization: `Bearer ${token}` };
  } finally {
    await target.close();
  }
}
