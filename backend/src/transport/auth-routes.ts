import { type ErrorCode, Me } from '@stepwise/shared-types';
import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type * as Oidc from 'openid-client';
import { z } from 'zod';
import type { AuthConfig, Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import { PUBLIC_ROUTE } from './access.ts';
import { encodeSession, LOGIN_COOKIE, readSession, SESSION_COOKIE } from '../auth/identify.ts';
import type { Store } from '../store/store.ts';
import { userFromClaims } from '../auth/identity.ts';
import { SignInError } from '../errors.ts';
import { isSettingsAdmin, type User } from '../auth/user.ts';

type OidcAuth = Extract<AuthConfig, { mode: 'oidc' }>;

/** `GET /api/me` when nobody is signed in: the error, and how to sign in here. */
const MeRefusal = z.object({
  error: z.object({ code: z.literal('unauthorized'), message: z.string() }),
  auth_mode: Me.shape.auth_mode,
  login_url: z.string().optional(),
});

/** How long a sign-in may take between /auth/login and the provider sending the browser back. */
const LOGIN_MAX_AGE_S = 10 * 60;

/** What /auth/login leaves in its cookie for /auth/callback to check. */
const LoginState = z.object({ state: z.string(), verifier: z.string(), nonce: z.string() });

/**
 * `GET /api/me` (who this client is, in every mode) and, with AUTH_MODE=oidc, the sign-in:
 * `/auth/login` sends the browser to the provider (authorization code with PKCE, a state and a
 * nonce kept in a short-lived signed cookie), `/auth/callback` takes the code, checks the ID token
 * and sets the sign-in cookie, `/auth/logout` ends the sign-in on the server (every instance then
 * refuses its cookie) and clears the cookie (and signs out at the provider when it offers that).
 */
export async function registerAuthRoutes(server: FastifyInstance, config: Config, logger: Logger, store: Pick<Store, 'revokeSignIn'>): Promise<void> {
  const app = server.withTypeProvider<ZodTypeProvider>();
  const { auth } = config;
  const secure = (config.access.publicOrigin ?? '').startsWith('https:');
  // The OpenID client is loaded only when people sign in through a provider.
  const provider = auth.mode === 'oidc' ? new OidcProvider(auth, logger, await import('openid-client')) : undefined;

  app.get(
    '/api/me',
    {
      ...PUBLIC_ROUTE,
      schema: {
        tags: ['auth'],
        summary: 'Who the server takes this client for, and how people sign in here',
        security: [],
        response: { 200: Me, 401: MeRefusal },
      },
    },
    async (request, reply) => {
      const user = request.user;
      // The refusal says how to get in: the web app shows the sign-in page, or asks for the token.
      if (!user) {
        return reply.code(401).send({
          error: { code: 'unauthorized' as const, message: auth.mode === 'oidc' ? 'Sign in first: /auth/login' : 'Not signed in' },
          auth_mode: auth.mode,
          ...(auth.mode === 'oidc' ? { login_url: '/auth/login' } : {}),
        });
      }
      return {
        auth_mode: auth.mode,
        user,
        ...(auth.mode === 'oidc' ? { logout_url: '/auth/logout' } : {}),
        settings_admin: isSettingsAdmin(user, auth.mode),
      };
    },
  );
  if (!provider || auth.mode !== 'oidc') return;

  const cookieOptions = (maxAgeS: number): CookieSerializeOptions => ({ path: '/', httpOnly: true, sameSite: 'lax', secure, signed: true, maxAge: maxAgeS });

  app.get(
    '/auth/login',
    { ...PUBLIC_ROUTE, schema: { tags: ['auth'], summary: 'Starts signing in with the OpenID provider', security: [] } },
    async (_request, reply) => {
      const { oidc } = provider;
      const login = { state: oidc.randomState(), verifier: oidc.randomPKCECodeVerifier(), nonce: oidc.randomNonce() };
      let target: URL;
      try {
        target = await provider.authorizationUrl(login);
      } catch (error) {
        logger.error({ err: error, issuer: auth.issuer }, 'the OpenID provider could not be reached');
        return signInProblem(reply, 503, 'The sign-in provider could not be reached. Try again in a moment.');
      }
      reply.setCookie(LOGIN_COOKIE, Buffer.from(JSON.stringify(login)).toString('base64url'), cookieOptions(LOGIN_MAX_AGE_S));
      return reply.redirect(target.href, 302);
    },
  );

  app.get(
    '/auth/callback',
    { ...PUBLIC_ROUTE, schema: { tags: ['auth'], summary: 'Where the OpenID provider sends the browser back', security: [] } },
    async (request, reply) => {
      const raw = request.cookies[LOGIN_COOKIE];
      const unsigned = raw === undefined ? undefined : request.unsignCookie(raw);
      reply.clearCookie(LOGIN_COOKIE, { path: '/' });
      const login = unsigned?.valid && unsigned.value ? parseLogin(unsigned.value) : undefined;
      if (!login) return signInProblem(reply, 400, 'This sign-in expired or was started in another browser. Start again.');
      let user: User;
      try {
        user = await provider.finish(new URL(request.url, auth.redirectUri), login);
      } catch (error) {
        logger.warn({ err: error }, 'a sign-in was refused');
        if (error instanceof SignInError) return signInProblem(reply, 400, `Sign-in refused: ${error.message}.`, error.code);
        return signInProblem(reply, 400, 'The sign-in could not be completed. Start again.');
      }
      reply.setCookie(SESSION_COOKIE, encodeSession(user, auth.sessionMaxAgeMs), cookieOptions(Math.floor(auth.sessionMaxAgeMs / 1000)));
      logger.info({ user: user.id, admin: user.admin }, 'signed in');
      return reply.redirect('/', 302);
    },
  );

  const logout = async (request: FastifyRequest, reply: FastifyReply) => {
    // The cookie is ended on the server too: a copy kept elsewhere (another tab, a stolen one) no longer signs in, on any instance.
    const raw = request.cookies[SESSION_COOKIE];
    const unsigned = raw === undefined ? undefined : request.unsignCookie(raw);
    const signIn = unsigned?.valid && unsigned.value ? readSession(unsigned.value) : undefined;
    if (signIn) {
      await store.revokeSignIn(signIn.id, new Date(signIn.expiresAt).toISOString());
      logger.info({ user: signIn.user.id }, 'signed out');
    }
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    const target = await provider.endSessionUrl(config.access.publicOrigin ?? '/');
    return reply.redirect(target ?? '/', 302);
  };
  app.get(
    '/auth/logout',
    { ...PUBLIC_ROUTE, schema: { tags: ['auth'], summary: 'Signs out (and at the provider, when it offers that)', security: [] } },
    logout,
  );
  app.post(
    '/auth/logout',
    { ...PUBLIC_ROUTE, schema: { tags: ['auth'], summary: 'Signs out (and at the provider, when it offers that)', security: [] } },
    logout,
  );
}

function parseLogin(value: string): z.infer<typeof LoginState> | undefined {
  try {
    const parsed = LoginState.safeParse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** What a failed code exchange means to the person signing in; the provider's own words go to the log only. */
function signInFailure(error: unknown): string {
  const text = error instanceof Error ? `${error.message} ${String((error.cause as { message?: unknown } | undefined)?.message ?? '')}` : '';
  if (/signature|JWKS|jwk/i.test(text)) return 'The ID token is not signed with a key the provider publishes';
  if (/nonce|state/i.test(text)) return 'The sign-in does not match the one this browser started';
  return 'The provider did not accept the sign-in';
}

/** A sign-in that cannot go on, as a small page with a way back in. */
function signInProblem(reply: FastifyReply, status: number, message: string, code?: ErrorCode) {
  // The code (sign_in_refused) is in the page and its header, for people reporting it and for scripts.
  if (code) reply.header('x-stepwise-error', code);
  const detail = code ? `<p>Error code: <code>${code}</code></p>` : '';
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Stepwise: sign-in</title></head><body><h1>Stepwise</h1><p>${message}</p>${detail}<p><a href="/auth/login">Sign in</a></p></body></html>`;
  return reply.code(status).type('text/html').header('cache-control', 'no-store').send(page);
}

/** The OpenID provider, found through its discovery document when first needed (and again after a failure). */
class OidcProvider {
  private configuration: Promise<Oidc.Configuration> | undefined;

  constructor(
    private readonly auth: OidcAuth,
    private readonly logger: Logger,
    readonly oidc: typeof Oidc,
  ) {}

  private discover(): Promise<Oidc.Configuration> {
    this.configuration ??= this.oidc
      .discovery(
        new URL(this.auth.issuer),
        this.auth.clientId,
        undefined,
        this.auth.clientSecret ? this.oidc.ClientSecretPost(this.auth.clientSecret) : this.oidc.None(),
        {
          // Every ID token's signature is checked against the provider's keys (jwks_uri). Plain
          // http is for a provider on this machine only (a test, a development provider): the
          // configuration refuses any other http issuer.
          execute: [this.oidc.enableNonRepudiationChecks, ...(this.auth.issuer.startsWith('http:') ? [this.oidc.allowInsecureRequests] : [])],
        },
      )
      .then((configuration) => {
        if (this.auth.issuer.startsWith('http:'))
          this.logger.warn({ issuer: this.auth.issuer }, 'the OpenID provider is on plain http (allowed on loopback only)');
        return configuration;
      })
      .catch((error: unknown) => {
        this.configuration = undefined;
        throw error;
      });
    return this.configuration;
  }

  async authorizationUrl(login: z.infer<typeof LoginState>): Promise<URL> {
    const configuration = await this.discover();
    return this.oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.auth.redirectUri,
      scope: this.auth.scopes,
      code_challenge: await this.oidc.calculatePKCECodeChallenge(login.verifier),
      code_challenge_method: 'S256',
      state: login.state,
      nonce: login.nonce,
    });
  }

  /**
   * Takes the provider's answer: the code for tokens, the ID token's signature checked against the
   * provider's published keys (even though the token came straight from its token endpoint) and its
   * claims checked, the user made of them.
   */
  async finish(callback: URL, login: z.infer<typeof LoginState>): Promise<User> {
    const configuration = await this.discover();
    let claims: Oidc.IDToken | undefined;
    try {
      const tokens = await this.oidc.authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: login.verifier,
        expectedState: login.state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (error) {
      throw new SignInError(signInFailure(error), error);
    }
    if (!claims) throw new SignInError('The provider sent no ID token');
    return userFromClaims(claims, this.auth);
  }

  async endSessionUrl(returnTo: string): Promise<string | undefined> {
    try {
      const configuration = await this.discover();
      if (!configuration.serverMetadata().end_session_endpoint) return undefined;
      return this.oidc.buildEndSessionUrl(configuration, { client_id: this.auth.clientId, post_logout_redirect_uri: returnTo }).href;
    } catch {
      return undefined;
    }
  }
}
