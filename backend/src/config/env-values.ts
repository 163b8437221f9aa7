import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from '../errors.ts';

/**
 * The kinds of value environment variables hold, and `section`, which the settings are made of.
 * A variable's message says what is wrong with it; loadConfig puts its name in front.
 */

export const integer = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, `must be an integer`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

export const boolean = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no']))
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

export const url = z
  .string()
  .trim()
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }));

export const nonEmpty = z.string().trim().min(1, 'must not be empty');

/** A comma-separated list, its items trimmed, empty ones dropped. */
export const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
);

/** A word out of a few, in any case: `choice(['normal', 'full'], 'must be normal or full')`. */
export const choice = <const Values extends readonly [string, ...string[]]>(values: Values, error: string) =>
  z.string().trim().toLowerCase().pipe(z.enum(values, { error }));

/** A header name, lower-cased as Node gives them. */
export const headerName = (example: string) =>
  z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9-]+$/, `must be a header name, e.g. ${example}`);

/** The names of the variables that are not set, of those a setting needs: `unset([['OIDC_ISSUER', env.OIDC_ISSUER], …])`. */
export function unset(needed: [string, unknown][]): string[] {
  return needed.filter(([, value]) => !value).map(([name]) => name);
}

/** An IPv4 or IPv6 address, or a CIDR range of either. */
export function validAddressOrRange(value: string): boolean {
  const [address, bits, extra] = value.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  const prefix = Number(bits);
  return /^\d{1,3}$/.test(bits) && prefix <= (family === 4 ? 32 : 128);
}

/** Whether a URL's host name is this machine: localhost (and names under it), 127.0.0.0/8, ::1. */
export function isLoopbackHostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(name) || name === '[::1]';
}

/**
 * One section of the settings: the environment variables it reads, each declared once with its
 * validation and default, and `build`, which makes them its part of the Config. The sections of
 * config.ts together are the Config's schema. A ConfigError that `build` throws (variables that
 * are each valid but do not fit together) becomes an issue with no path: its message is the whole
 * line, and loadConfig reports it only when every variable is valid on its own.
 */
export function section<Variables extends z.ZodObject, Part extends object>(variables: Variables, build: (env: z.output<Variables>) => Part) {
  return variables.transform((env, context) => {
    try {
      return build(env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      context.addIssue({ code: 'custom', message: error.message, path: [] });
      return z.NEVER;
    }
  });
}
