import { hash, verify } from '@node-rs/argon2';

/**
 * argon2id (the package default) with the OWASP-recommended minimum: 19 MiB, 2 passes, 1 lane.
 * The PHC string stores the parameters, so raising them later still verifies old hashes.
 */
const options = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

export const passwordMinLength = 10;
export const passwordMaxLength = 1024;

export function hashPassword(password: string): Promise<string> {
  return hash(password, options);
}

export function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  return verify(passwordHash, password);
}

let dummyHash: Promise<string> | undefined;
/** Verifies against a throwaway hash so an unknown email costs as much time as a wrong password. */
export async function spendVerifyTime(password: string): Promise<void> {
  dummyHash ??= hashPassword('not a real password, only spends time');
  await verify(await dummyHash, password);
}
