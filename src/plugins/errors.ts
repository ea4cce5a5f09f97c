import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable } from '../infra/db/availability.ts';
import { AppError, type ErrorCode, errorCatalog, type FieldError } from '../infra/errors.ts';
import { finiteKeyword } from '../infra/http/finite-numbers.ts';
import { type Problem, ProblemSchema, problemTypeBase } from '../infra/http/problem.ts';
import { randomBytesFromPool } from '../infra/random.ts';
import { asDiskFull, type Storage } from '../infra/storage.ts';
import { securityHeaders } from './security-headers.ts';

/** Longer request targets answer 414 (RFC 9110 asks servers to take at least 8,000 octets). */
export const maxUrlLength = 8192;

/**
 * Turns every error into application/problem+json; unknown errors become a bare 500 and are logged with their
 * stack. A full disk (`storage`: where the database and the export files are) answers 507 naming the path.
 */
export const errorsPlugin = fp(async function errorsPlugin(app: FastifyInstance, { storage }: { storage?: Storage }) {
  app.addSchema(ProblemSchema);

  app.addHook('onRequest', (request, _reply, done) => {
    if (request.url.length > maxUrlLength) {
      return done(
        new AppError(
          'uri_too_long',
          `The URL is ${request.url.length} characters long; at most ${maxUrlLength} are accepted. Send long searches as a JSON body (POST /v1/search).`,
        ),
      );
    }
    done();
  });

  app.setErrorHandler((thrown: FastifyError, request, reply) => {
    const error = (
      storage ? asDiskFull(thrown, storage.databasePath, storage.minFreeBytes, `${request.method} ${request.url.split('?')[0]}`) : thrown
    ) as FastifyError;
    if (error instanceof AppError) {
      if (error.code === 'insufficient_storage') request.log.error({ err: thrown }, 'the disk is full');
      return sendProblem(request, reply, error.status, error.code, error.title, error.message, error.extras, error.headers);
    }
    if (error.validation) {
      const errors = error.validation.map((v) => validationFieldError(error.validationContext ?? 'request', v));
      const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
      return sendProblem(request, reply, 400, 'validation_failed', 'The request is not valid', detail, { errors });
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      // Fastify's own client errors: bad JSON body, unsupported content type, body too large…
      const code: ErrorCode = clientErrorCodes[error.statusCode] ?? 'validation_failed';
      const field = error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'body' : undefined;
      return sendProblem(
        request,
        reply,
        error.statusCode,
        code,
        errorCatalog[code].title,
        error.message,
        field ? { errors: [{ field, message: error.message }] } : {},
      );
    }
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'the database does not answer');
      return sendProblem(
        request,
        reply,
        503,
        'unavailable',
        errorCatalog.unavailable.title,
        'The database does not answer right now; retry in a moment',
        { reason: 'database_unavailable' },
        { 'retry-after': '1' },
      );
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendProblem(
      request,
      reply,
      500,
      'internal',
      'Internal server error',
      'Something went wrong on our side. Quote the request id when reporting it.',
    );
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, 404, 'not_found', 'Not found', `No route ${request.method} ${request.url.split('?')[0]}`),
  );
});

const clientErrorCodes: Record<number, ErrorCode> = {
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'header_fields_too_large',
};

/**
 * Fastify's answers for requests that never reach a route (a URL that does not decode, an async
 * constraint that fails), as problem documents with the security headers (`frameworkErrors`).
 */
export const frameworkErrors: NonNullable<FastifyServerOptions['frameworkErrors']> = (error, request, reply) => {
  reply.headers(securityHeaders(undefined));
  const badUrl = error.code === 'FST_ERR_BAD_URL';
  return sendProblem(
    request as FastifyRequest,
    reply as FastifyReply,
    400,
    'validation_failed',
    errorCatalog.validation_failed.title,
    badUrl ? 'The URL is not valid: a percent sign must start an escape of two hex digits that decodes to UTF-8' : error.message,
    badUrl ? { errors: [{ field: 'url', message: 'is not valid percent-encoding' }] } : {},
  );
};

/**
 * The raw server's answer to a request it cannot parse (headers over the size limit: 431; a broken
 * request line: 400; a request too slow to arrive: 408), as a problem document, then the connection
 * closes. No route, hook or logger request exists at this point, so the answer is written by hand.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const code: ErrorCode = error.code === 'HPE_HEADER_OVERFLOW' ? 'header_fields_too_large' : 'validation_failed';
  const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : errorCatalog[code].status;
  const detail =
    code === 'header_fields_too_large'
      ? 'The request line and headers together exceed the server limit (16 KB); send long searches as a JSON body (POST /v1/search)'
      : status === 408
        ? 'The request did not arrive in time'
        : 'The request is not valid HTTP/1.1';
  const requestId = `req_${randomBytesFromPool(9).toString('base64url')}`;
  const body = JSON.stringify({
    type: problemTypeBase + code,
    title: status === 408 ? 'Request timeout' : errorCatalog[code].title,
    status,
    detail,
    request_id: requestId,
    code,
  });
  const headers = {
    ...securityHeaders(undefined),
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    'x-request-id': requestId,
  };
  const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status] ?? 'Bad Request';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')}\r\n\r\n${body}`,
  );
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: string,
  title: string,
  detail: string,
  extras: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): FastifyReply {
  const body: Problem = {
    type: problemTypeBase + code,
    title,
    status,
    detail,
    instance: request.url.split('?')[0] ?? request.url,
    request_id: String(request.id),
    code,
    ...extras,
  };
  return reply.code(status).headers(headers).type('application/problem+json; charset=utf-8').send(body);
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  schemaPath?: string;
  parentSchema?: Record<string, unknown>;
}

function validationFieldError(context: string, v: AjvError): FieldError {
  const path = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
  let field = path ? `${context}.${path}` : context;
  const p = v.params;
  let allowed: unknown;
  let message = v.message ?? 'is not valid';
  switch (v.keyword) {
    case 'additionalProperties':
      field = `${field === context ? context : field}.${String(p.additionalProperty)}`;
      message = 'is not a known parameter';
      break;
    case 'required':
      field = `${field === context ? context : field}.${String(p.missingProperty)}`;
      message = 'is required';
      break;
    case 'enum':
      allowed = p.allowedValues;
      message = `must be one of: ${(p.allowedValues as unknown[]).join(', ')}`;
      break;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const s = v.parentSchema ?? {};
      allowed = { minimum: s.minimum, maximum: s.maximum };
      message = `must be between ${String(s.minimum ?? '-∞')} and ${String(s.maximum ?? '∞')}`;
      break;
    }
    case 'pattern':
      allowed = { pattern: p.pattern };
      break;
    case finiteKeyword: {
      const s = v.parentSchema ?? {};
      allowed = { minimum: s.minimum, maximum: s.maximum };
      message =
        s.minimum !== undefined || s.maximum !== undefined
          ? `must be a finite number between ${String(s.minimum ?? '-∞')} and ${String(s.maximum ?? '∞')}`
          : 'must be a finite number';
      break;
    }
    case 'type':
      allowed = { type: p.type };
      message = `must be ${String(p.type)}`;
      break;
    case 'anyOf': {
      const literals = (v.parentSchema?.anyOf as Array<{ const?: unknown }> | undefined)
        ?.map((s) => s.const)
        .filter((c) => c !== undefined);
      if (literals && literals.length > 0) {
        allowed = literals;
        message = `must be one of: ${literals.join(', ')}`;
      }
      break;
    }
  }
  return allowed === undefined ? { field, message } : { field, message, allowed };
}
