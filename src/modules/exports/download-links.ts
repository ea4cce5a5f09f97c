import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { serverSecret } from './export-jobs.repository.ts';

/**
 * Signed download links of export jobs: `/api/v2/exports/<job>/download?expires=<unix>&signature=<hex>`,
 * the signature an HMAC-SHA256 over `<job id>.<expires>` with a server key. The link is the credential
 * (no bearer token), so it can be handed to a browser or a webhook receiver; it stops working at
 * `expires`. The key is EXPORT_LINK_SECRET, or one made on first use and kept in `server_secrets`, so
 * every node signs and checks alike.
 */
export class DownloadLinks {
  private key: Promise<string> | undefined;

  constructor(
    private readonly db: Db,
    private readonly config: Pick<Config, 'EXPORT_LINK_SECRET' | 'EXPORT_LINK_TTL'>,
    /** Where a kind of job is read and downloaded: `/api/v2/exports`, `/api/v2/match/jobs`. Job ids differ by kind (`job_`, `mjob_`). */
    private readonly jobsPath = '/api/v2/exports',
  ) {}

  private secret(): Promise<string> {
    if (this.config.EXPORT_LINK_SECRET) return Promise.resolve(this.config.EXPORT_LINK_SECRET);
    this.key ??= serverSecret(this.db, 'export_link_key', () => randomBytes(32).toString('base64url')).catch((error: unknown) => {
      this.key = undefined;
      throw error;
    });
    return this.key;
  }

  async sign(jobId: string, expires: number): Promise<string> {
    return createHmac('sha256', await this.secret())
      .update(`${jobId}.${expires}`)
      .digest('hex');
  }

  /** The path of a link valid for EXPORT_LINK_TTL from `now`, and when it expires. */
  async linkFor(jobId: string, now = new Date()): Promise<{ path: string; expiresAt: Date }> {
    const expires = Math.floor(now.getTime() / 1000) + this.config.EXPORT_LINK_TTL;
    const signature = await this.sign(jobId, expires);
    return { path: `${this.jobsPath}/${jobId}/download?expires=${expires}&signature=${signature}`, expiresAt: new Date(expires * 1000) };
  }

  /**
   * Checks a link: a signature that does not match the job and expiry (tampered with, or made with
   * another key) is `forbidden`; a genuine link past its expiry is `gone`. The signature is checked
   * first, so changing `expires` to extend a link is a forgery, not an expiry.
   */
  async verify(jobId: string, expires: number, signature: string, now = new Date()): Promise<void> {
    const expected = Buffer.from(await this.sign(jobId, expires), 'hex');
    const given = /^[0-9a-f]{64}$/.test(signature) ? Buffer.from(signature, 'hex') : Buffer.alloc(0);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new AppError('forbidden', 'This download link is not valid: its signature does not match', { reason: 'invalid_signature' });
    }
    if (expires * 1000 <= now.getTime()) {
      throw new AppError(
        'gone',
        `This download link expired at ${new Date(expires * 1000).toISOString()}; ask the job (GET ${this.jobsPath}/${jobId}) for a new one`,
        { reason: 'link_expired' },
      );
    }
  }
}
