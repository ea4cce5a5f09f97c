import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { sessionCookieOptions } from '../auth/accounts.service.ts';
import { PasswordFormSchema, SignInFormSchema, SignInQuerySchema, SignUpFormSchema } from './dashboard.schema.ts';
import { formError, parseForm, statusOf, withErrorHeaders } from './forms.ts';
import type { PageOptions } from './page-kit.ts';
import { passwordPage, signInPage, signUpPage } from './pages.ts';

/** Sign-up, sign-in, sign-out and the account's password: the pages around a session. */
export async function sessionRoutes(appBase: FastifyInstance, { kit }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();

  const startSession = async (request: FastifyRequest, reply: FastifyReply, accountId: number) => {
    const { cookieValue } = await app.accounts.createSession(accountId, {
      ip: request.ip,
      userAgent: request.headers['user-agent'] ?? null,
    });
    reply.setCookie(kit.sessionCookie, cookieValue, sessionCookieOptions(kit.secure));
    reply.clearCookie(kit.preSessionCookie, { path: '/' });
  };

  app.get('/', async (request, reply) => reply.redirect(request.dashboard?.session ? '/search' : '/signin', 303));

  app.get('/signin', { schema: { querystring: SignInQuerySchema } }, async (request, reply) => {
    if (request.dashboard?.session) return reply.redirect('/search', 303);
    return kit.send(reply, signInPage(kit.ctx(request), undefined, safeNext(request.query.next)));
  });

  app.post('/signin', async (request, reply) => {
    const form = parseForm(SignInFormSchema, request.body, { verbatim: ['password'] });
    const email = form.email ?? '';
    const next = safeNext(form.next);
    try {
      const account = await app.accounts.signIn(email, form.password ?? '', request.ip);
      await startSession(request, reply, account.id);
      return reply.redirect(next || '/search', 303);
    } catch (error) {
      return kit.send(withErrorHeaders(reply, error), signInPage(kit.ctx(request), formError(error, { email }), next), statusOf(error));
    }
  });

  app.get('/signup', async (request, reply) => {
    if (request.dashboard?.session) return reply.redirect('/search', 303);
    return kit.send(reply, signUpPage(kit.ctx(request)));
  });

  app.post('/signup', async (request, reply) => {
    const form = parseForm(SignUpFormSchema, request.body, { verbatim: ['password'] });
    const email = form.email ?? '';
    try {
      const account = await app.accounts.signUp(email, form.password ?? '', request.ip);
      await startSession(request, reply, account.id);
      return reply.redirect('/tokens/new?welcome=1', 303);
    } catch (error) {
      return kit.send(withErrorHeaders(reply, error), signUpPage(kit.ctx(request), formError(error, { email })), statusOf(error));
    }
  });

  app.post('/signout', async (request, reply) => {
    await app.accounts.destroySession(request.dashboard?.cookieValue);
    reply.clearCookie(kit.sessionCookie, { path: '/' });
    return reply.redirect('/signin', 303);
  });

  await app.register(async (signedIn) => {
    signedIn.addHook('preHandler', kit.requireSession);
    signedIn.get('/account/password', async (request, reply) => kit.send(reply, passwordPage(kit.ctx(request))));
    signedIn.post('/account/password', async (request, reply) => {
      const form = parseForm(PasswordFormSchema, request.body, { verbatim: ['current_password', 'new_password'] });
      try {
        await app.accounts.changePassword(
          kit.session(request).accountId,
          form.current_password ?? '',
          form.new_password ?? '',
          request.dashboard?.cookieValue ?? null,
        );
        return kit.send(reply, passwordPage(kit.ctx(request), undefined, true));
      } catch (error) {
        return kit.send(reply, passwordPage(kit.ctx(request), formError(error, {})), statusOf(error));
      }
    });
  });
}

/**
 * Where to go after sign-in: a path of this site, or '' (the default page). The value is read as a
 * browser would, relative to this origin, and kept only if it stays on it; what is returned is the
 * parsed path, query and fragment, percent-encoded, so it is always a valid Location header. Control
 * characters and backslashes are refused before parsing: browsers drop or rewrite them (`/\tevil`),
 * which is how a value that looks like a path can lead elsewhere.
 */
export function safeNext(next: string | undefined): string {
  if (!next || !next.startsWith('/') || /[\u0000-\u001f\u007f\\]/.test(next)) return '';
  const base = 'http://leadatlas.invalid';
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return '';
  }
  if (url.origin !== base) return '';
  const path = `${url.pathname}${url.search}${url.hash}`;
  // Parsed again on its own it must still be here: `//host` would not.
  return path.startsWith('/') && !path.startsWith('//') ? path : '';
}
