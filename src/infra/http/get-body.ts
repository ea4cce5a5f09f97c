import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';

/**
 * The JSON body of a GET request, read by hand: Fastify parses no body on GET, and some clients send
 * one (RFC 9110 §9.3.1 allows it). Undefined when there is none; `unsupported_media_type` for a body
 * that is not JSON; `validation_failed` for one larger than `maxBytes` or not valid JSON.
 */
export async function readJsonGetBody(request: FastifyRequest, maxBytes: number): Promise<unknown> {
  const length = request.headers['content-length'];
  const chunked = request.headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return undefined;
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw new AppError('unsupported_media_type', `A body must be application/json, got ${type === '' ? 'no Content-Type' : type}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > maxBytes)
      throw new AppError('validation_failed', `The body is larger than ${maxBytes} bytes`, {
        errors: [{ field: 'body', message: 'is too large' }],
      });
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('validation_failed', 'The body is not valid JSON', {
      errors: [{ field: 'body', message: 'is not valid JSON' }],
    });
  }
}
