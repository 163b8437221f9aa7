import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { isLoopbackHostName } from './env-values.ts';
import { accessSection } from './sections/access.ts';
import { agentSection } from './sections/agent.ts';
import { limitsSection } from './sections/limits.ts';
import { modelSection } from './sections/model.ts';
import { notifySection } from './sections/notify.ts';
import { type PlaceDefaults, serverSection } from './sections/server.ts';
import { storeSection } from './sections/store.ts';
import { toolsSection } from './sections/tools.ts';
import { OTEL_SDK_VARIABLES, tracingSection } from './sections/tracing.ts';

export { needsStrictAlternation } from './sections/model.ts';

/**
 * The settings' schema: each section (sections/) reads its environment variables from the same
 * environment and yields its part of the Config; together they are the Config. PROTOCOL.md's
 * variables are among them; README.md says what each does.
 */
export function configSchema(defaults: PlaceDefaults) {
  return serverSection(defaults)
    .and(modelSection)
    .and(agentSection)
    .and(toolsSection)
    .and(limitsSection)
    .and(storeSection)
    .and(accessSection)
    .and(notifySection)
    .and(tracingSection);
}

/** The validated settings every module receives through injection. */
export type Config = z.output<ReturnType<typeof configSchema>> & {
  /** The environment variables that were set: they pin their settings, which the app then cannot change. */
  setVariables?: readonly string[];
};

/** AUTH_MODE and what each mode needs. */
export type AuthConfig = Config['auth'];

/** OpenTelemetry tracing, when on: what spans may hold beyond what the SDK reads from OTEL_* itself. */
export type TracingConfig = NonNullable<Config['tracing']>;

/** The variables a schema of sections reads: the keys of each section's object. */
function variablesOf(schema: z.core.SomeType): string[] {
  if (schema instanceof z.core.$ZodIntersection) return [...variablesOf(schema._zod.def.left), ...variablesOf(schema._zod.def.right)];
  if (schema instanceof z.core.$ZodPipe) return variablesOf(schema._zod.def.in);
  if (schema instanceof z.core.$ZodObject) return Object.keys(schema._zod.def.shape);
  return [];
}

/** The variables the schema reads, each once (a few, such as PUBLIC_ORIGIN, serve two sections). */
const SCHEMA_VARIABLES = [...new Set(variablesOf(configSchema({ promptsDir: '' })))];

/** Every environment variable the server reads, by name (the OpenTelemetry SDK's among them). */
export const ENVIRONMENT_VARIABLES: readonly string[] = [...SCHEMA_VARIABLES, ...OTEL_SDK_VARIABLES];

/** Reads and validates the settings; throws one ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined>, defaults: PlaceDefaults): Config {
  // An empty variable means "not set", as in most shells' `VAR= command`.
  const present = Object.fromEntries(SCHEMA_VARIABLES.flatMap((key) => (env[key] ? [[key, env[key]]] : [])));
  const parsed = configSchema(defaults).safeParse(present);
  if (!parsed.success) throw firstProblem(parsed.error, present);
  return { ...parsed.data, setVariables: Object.keys(present) };
}

/**
 * The one problem to report: a bad variable first (named, with its value unless it may be secret);
 * only when each is valid, settings that do not fit together (an issue without a path, its
 * message the whole line).
 */
function firstProblem(error: z.ZodError, present: Record<string, string | undefined>): ConfigError {
  const issue = error.issues.find((candidate) => candidate.path.length > 0) ?? error.issues[0]!;
  if (issue.path.length === 0) return new ConfigError(issue.message);
  const name = String(issue.path[0]);
  const secret = /KEY|TOKEN|SECRET|DATABASE_URL|REDIS_URL|PROXY/i.test(name);
  const shown = present[name] === undefined || secret ? '' : ` (got "${present[name]}")`;
  return new ConfigError(`Invalid ${name}: ${issue.message}${shown}`);
}

/**
 * Why the server must not start as configured: listening beyond loopback (HOST=0.0.0.0 in a
 * container, a LAN address) with nobody signing in would leave every client but this machine's
 * refused, which is never what the operator meant; undefined when it may start.
 */
export function exposureProblem(config: Pick<Config, 'host' | 'auth'>): string | undefined {
  // An IPv6 address is written bare in HOST (::1) and in brackets in a URL's host name ([::1]).
  const name = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  if (config.auth.mode !== 'none' || isLoopbackHostName(name)) return undefined;
  return `HOST=${config.host} listens beyond this machine, but nobody signs in (AUTH_MODE=none). Set AUTH_TOKEN (a shared token, at least 16 characters), or AUTH_MODE=oidc or header to have people sign in, or HOST=127.0.0.1 to keep it to this machine.`;
}
