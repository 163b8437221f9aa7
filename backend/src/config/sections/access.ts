import { z } from 'zod';
import { ConfigError } from '../../errors.ts';
import { choice, headerName, integer, isLoopbackHostName, list, nonEmpty, section, unset, url, validAddressOrRange } from '../env-values.ts';

/** The origin users reach the server at (behind a proxy), e.g. https://chat.example.com; links start with it too. */
export const PUBLIC_ORIGIN = z
  .string()
  .trim()
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) origin, e.g. https://chat.example.com' }));

/** The proxies in front of the server: their forwarded headers are believed, and no per-address limit is theirs. */
export const TRUSTED_PROXIES = list.pipe(
  z.array(z.string().refine(validAddressOrRange, 'must be a comma-separated list of IP addresses or CIDR ranges, e.g. 10.0.0.5,172.16.0.0/12')),
);

const AuthMode = choice(['none', 'token', 'oidc', 'header'], 'must be none, token, oidc or header');

const AccessVariables = z.object({
  AUTH_TOKEN: z
    .string()
    .trim()
    .min(16, 'must be at least 16 characters')
    .regex(/^[A-Za-z0-9._~-]+$/, 'may hold only letters, digits and - . _ ~ (it travels in a WebSocket subprotocol)')
    .optional(),
  AUTH_MODE: AuthMode.optional(),
  OIDC_ISSUER: url.optional(),
  OIDC_CLIENT_ID: nonEmpty.optional(),
  OIDC_CLIENT_SECRET: nonEmpty.optional(),
  OIDC_SCOPES: nonEmpty.default('openid profile email'),
  OIDC_ADMIN_EMAILS: list.optional(),
  OIDC_ADMIN_GROUP: nonEmpty.optional(),
  OIDC_GROUPS_CLAIM: nonEmpty.default('groups'),
  /** Signs the sign-in cookie: the same on every instance, so any instance accepts it. */
  SESSION_SECRET: z.string().trim().min(32, 'must be at least 32 characters').optional(),
  SESSION_MAX_AGE_HOURS: integer(1, 24 * 90).default(12),
  AUTH_HEADER: headerName('X-Forwarded-User').optional(),
  AUTH_EMAIL_HEADER: headerName('X-Forwarded-Email').optional(),
  TRUSTED_PROXIES: TRUSTED_PROXIES.optional(),
  /** Admins in header mode: user names or emails. */
  AUTH_ADMIN_USERS: list.optional(),
  /** A token that opens GET /metrics alone (for a Prometheus scraper that must not hold AUTH_TOKEN). */
  METRICS_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  ALLOWED_ORIGINS: list.pipe(z.array(z.url({ error: 'must be a comma-separated list of origins' }))).optional(),
  PUBLIC_ORIGIN: PUBLIC_ORIGIN.optional(),
  ALLOWED_HOSTS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((host) => host.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z.string().regex(/^(\*\.)?[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/, 'must be a comma-separated list of host names (no ports), e.g. chat.example.com,*.internal'),
      ),
    )
    .optional(),
});

/** Who the users are and who may reach the server at all. */
export const accessSection = section(AccessVariables, (env) => ({
  /** Who the users are (AUTH_MODE) and how each is recognised; see auth/. */
  auth: authConfig(env),
  access: {
    authToken: env.AUTH_TOKEN,
    metricsToken: env.METRICS_TOKEN,
    allowedOrigins: env.ALLOWED_ORIGINS,
    /** The origin users reach the server at (behind a proxy), e.g. https://chat.example.com. */
    publicOrigin: env.PUBLIC_ORIGIN === undefined ? undefined : new URL(env.PUBLIC_ORIGIN).origin,
    /** Host names (beyond loopback names and IP addresses) the server answers to; `*.` for subdomains. */
    allowedHosts: env.ALLOWED_HOSTS ?? [],
  },
}));

/** AUTH_MODE (token when AUTH_TOKEN is set, none otherwise) and the settings its mode needs. */
function authConfig(env: z.output<typeof AccessVariables>) {
  const mode: z.output<typeof AuthMode> = env.AUTH_MODE ?? (env.AUTH_TOKEN ? 'token' : 'none');
  switch (mode) {
    case 'none':
      if (env.AUTH_TOKEN) throw new ConfigError('Invalid AUTH_MODE: none, yet AUTH_TOKEN is set; use AUTH_MODE=token or unset AUTH_TOKEN');
      return { mode };
    case 'token':
      if (!env.AUTH_TOKEN) throw new ConfigError('Invalid AUTH_MODE: token needs AUTH_TOKEN');
      return { mode };
    case 'oidc': {
      const absent = unset([
        ['OIDC_ISSUER', env.OIDC_ISSUER],
        ['OIDC_CLIENT_ID', env.OIDC_CLIENT_ID],
        ['PUBLIC_ORIGIN', env.PUBLIC_ORIGIN],
        ['SESSION_SECRET', env.SESSION_SECRET],
      ]);
      if (absent.length > 0) throw new ConfigError(`Invalid AUTH_MODE: oidc needs ${absent.join(', ')}`);
      // Over plain http anyone on the path could answer for the provider; only this machine is trusted so.
      const issuer = new URL(env.OIDC_ISSUER!);
      if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && isLoopbackHostName(issuer.hostname)))
        throw new ConfigError('Invalid OIDC_ISSUER: must be an https URL (plain http only for a provider on this machine: localhost, 127.0.0.1, [::1])');
      return {
        mode,
        issuer: env.OIDC_ISSUER!,
        clientId: env.OIDC_CLIENT_ID!,
        clientSecret: env.OIDC_CLIENT_SECRET,
        scopes: env.OIDC_SCOPES,
        adminEmails: (env.OIDC_ADMIN_EMAILS ?? []).map((email) => email.toLowerCase()),
        adminGroup: env.OIDC_ADMIN_GROUP,
        groupsClaim: env.OIDC_GROUPS_CLAIM,
        /** Where the provider sends the browser back: PUBLIC_ORIGIN/auth/callback. */
        redirectUri: `${new URL(env.PUBLIC_ORIGIN!).origin}/auth/callback`,
        sessionSecret: env.SESSION_SECRET!,
        sessionMaxAgeMs: env.SESSION_MAX_AGE_HOURS * 3_600_000,
      };
    }
    case 'header': {
      const absent = unset([
        ['AUTH_HEADER', env.AUTH_HEADER],
        ['TRUSTED_PROXIES', env.TRUSTED_PROXIES?.length],
      ]);
      if (absent.length > 0) throw new ConfigError(`Invalid AUTH_MODE: header needs ${absent.join(', ')} (the header is believed only from those addresses)`);
      return {
        mode,
        header: env.AUTH_HEADER!,
        emailHeader: env.AUTH_EMAIL_HEADER,
        trustedProxies: env.TRUSTED_PROXIES!,
        /** AUTH_ADMIN_USERS without an @: user names, matched exactly, as ids are. */
        adminNames: (env.AUTH_ADMIN_USERS ?? []).filter((entry) => !entry.includes('@')),
        /** AUTH_ADMIN_USERS with an @: emails, matched without case against the email header. */
        adminEmails: (env.AUTH_ADMIN_USERS ?? []).filter((entry) => entry.includes('@')).map((email) => email.toLowerCase()),
      };
    }
  }
}
