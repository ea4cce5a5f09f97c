import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, type FieldError } from '../infra/errors.ts';
import { ProblemSchema, problemTypeBase, type Problem } from '../infra/http/problem.ts';

/** Turns every error into application/problem+json; unknown errors become a bare 500 and are logged with their stack. */
export const errorsPlugin = fp(async function errorsPlugin(app: FastifyInstance) {
  app.addSchema(ProblemSchema);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      return sendProblem(request, reply, error.status, error.code, error.title, error.message, error.extras, error.headers);
    }
    if (error.validation) {
      const errors = error.validation.map((v) => validationFieldError(error.validationContext ?? 'request', v));
      const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
      return sendProblem(request, reply, 400, 'validation_failed', 'The request is not valid', detail, { errors });
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      // Fastify's own client errors: bad JSON body, unsupported content type, body too large…
      const code = error.statusCode === 415 ? 'unsupported_media_type' : 'validation_failed';
      const field = error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'body' : undefined;
      return sendProblem(request, reply, error.statusCode, code, error.statusCode === 415 ? 'Unsupported media type' : 'The request is not valid', error.message,
        field ? { errors: [{ field, message: error.message }] } : {});
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendProblem(request, reply, 500, 'internal', 'Internal server error', 'Something went wrong on our side. Quote the request id when reporting it.');
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, 404, 'not_found', 'Not found', `No route ${request.method} ${request.url.split('?')[0]}`),
  );
});

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
    case 'type':
      allowed = { type: p.type };
      message = `must be ${String(p.type)}`;
      break;
    case 'anyOf': {
      const literals = (v.parentSchema?.anyOf as Array<{ const?: unknown }> | undefined)?.map((s) => s.const).filter((c) => c !== undefined);
      if (literals && literals.length > 0) {
        allowed = literals;
        message = `must be one of: ${literals.join(', ')}`;
      }
      break;
    }
  }
  return allowed === undefined ? { field, message } : { field, message, allowed };
}
