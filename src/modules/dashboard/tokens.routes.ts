import type { FastifyInstance } from 'fastify';
import { AppError } from '../../infra/errors.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { IdParamsSchema, NewTokenQuerySchema, RotateFormSchema, TokenFormSchema, TokensQuerySchema } from './dashboard.schema.ts';
import { formError, parseForm, statusOf } from './forms.ts';
import { baseUrl, type PageOptions } from './page-kit.ts';
import { expiryChoices, newTokenPage, tokenCreatedPage, tokensPage } from './pages.ts';

/** API tokens: the list, a new token (shown once), revoke and rotate. */
export async function tokensRoutes(appBase: FastifyInstance, { kit, config }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('preHandler', kit.requireSession);

  app.get('/tokens', { schema: { querystring: TokensQuerySchema } }, async (request, reply) => {
    const tokens = await app.tokens.listTokens(kit.session(request).accountId);
    const { revoked: revokedId } = request.query;
    const revoked = revokedId ? tokens.find((t) => String(t.id) === revokedId) : undefined;
    return kit.send(
      reply,
      tokensPage(
        kit.ctx(request),
        tokens,
        revoked ? `Token “${revoked.name}” was revoked. Calls made with it now fail with 401.` : undefined,
      ),
    );
  });

  app.get('/tokens/new', { schema: { querystring: NewTokenQuerySchema } }, async (request, reply) =>
    kit.send(reply, newTokenPage(kit.ctx(request), undefined, request.query.welcome === '1')),
  );

  app.post('/tokens', async (request, reply) => {
    const form = parseForm(TokenFormSchema, request.body);
    const values = { ...form, scopes: form.scopes ?? [] };
    try {
      const expiresInDays = parseExpiry(form.expiry ?? '', form.confirm_no_expiry === 'yes');
      const created = await app.tokens.createToken({
        accountId: kit.session(request).accountId,
        name: form.name ?? '',
        scopes: values.scopes,
        expiresInDays,
      });
      return kit.send(reply, tokenCreatedPage(kit.ctx(request), created, baseUrl(config, request)), 201);
    } catch (error) {
      return kit.send(reply, newTokenPage(kit.ctx(request), formError(error, values)), statusOf(error));
    }
  });

  app.post('/tokens/:id/revoke', { schema: { params: IdParamsSchema } }, async (request, reply) => {
    const id = Number(request.params.id);
    await app.tokens.revokeToken(kit.session(request).accountId, id);
    return reply.redirect(`/tokens?revoked=${id}`, 303);
  });

  app.post('/tokens/:id/rotate', { schema: { params: IdParamsSchema } }, async (request, reply) => {
    const { grace_seconds: grace } = parseForm(RotateFormSchema, request.body);
    const created = await app.tokens.rotateToken(kit.session(request).accountId, Number(request.params.id), grace ?? Number.NaN);
    return kit.send(reply, tokenCreatedPage(kit.ctx(request), created, baseUrl(config, request)), 201);
  });
}

/** Days from the expiry radio; `never` only with the confirmation box ticked. */
export function parseExpiry(value: string, confirmedNoExpiry: boolean): number | null {
  if (value === 'never') {
    if (confirmedNoExpiry) return null;
    throw new AppError('validation_failed', 'confirm_no_expiry: tick the confirmation to create a token without expiry', {
      errors: [{ field: 'confirm_no_expiry', message: 'must be ticked to create a token without expiry' }],
    });
  }
  const days = Number(value);
  if (!(expiryChoices as readonly number[]).includes(days)) {
    throw new AppError('validation_failed', `expiry: must be one of ${expiryChoices.join(', ')} days or never`, {
      errors: [
        { field: 'expiry', message: `must be one of ${expiryChoices.join(', ')} days, or no expiry`, allowed: [...expiryChoices, 'never'] },
      ],
    });
  }
  return days;
}
