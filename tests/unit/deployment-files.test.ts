import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENVIRONMENT_VARIABLES, exposureProblem, loadConfig } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { DCLinter } from 'dclint';
import { parse } from 'yaml';

// compose.yaml, .env.example and the Dockerfile, checked without Docker: their shape, and that
// every setting they give the server is one it knows and accepts.
const root = join(import.meta.dirname, '..', '..');
const read = (name: string) => readFileSync(join(root, name), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  profiles?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[] };
  ports?: string[];
  volumes?: string[];
}
const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;

/** The variables .env.example sets or shows (commented out), by name. */
const exampleVariables = [...read('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]!);
/** What .env.example sets (uncommented), with a token and a password filled in. */
const exampleValues: Record<string, string> = {
  ...Object.fromEntries([...read('.env.example').matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((match) => [match[1]!, match[2]!])),
  AUTH_TOKEN: 'a-token-of-24-characters',
  POSTGRES_PASSWORD: 'password',
};

/** Compose's interpolation: ${NAME}, ${NAME:-default}, ${NAME:?error}; $$ is a dollar sign. */
function interpolate(value: string, env: Record<string, string>): string {
  return value
    .replace(/\$\{([A-Z][A-Z0-9_]*)(?::([-?])([^}]*))?\}/g, (_match, name: string, kind?: string, rest?: string) => {
      const found = env[name];
      if (found) return found;
      if (kind === '?') throw new Error(`${name}: ${rest}`);
      return kind === '-' ? (rest ?? '') : '';
    })
    .replaceAll('$$', '$');
}

/** The names compose.yaml interpolates (its own settings, such as STEPWISE_PORT and POSTGRES_PASSWORD). */
const interpolated = new Set([...read('compose.yaml').matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)].map((match) => match[1]!));

describe('compose.yaml', () => {
  it('runs two Stepwise instances behind one port, with PostgreSQL and Redis; Restate, tracing and metrics in profiles', () => {
    const always = Object.keys(services).filter((name) => !services[name]!.profiles);
    expect(always.sort()).toEqual(['postgres', 'proxy', 'redis', 'stepwise-1', 'stepwise-2']);
    const byProfile = (profile: string) => Object.keys(services).filter((name) => services[name]!.profiles?.includes(profile));
    expect(byProfile('restate')).toEqual(['restate']);
    expect(byProfile('tracing').sort()).toEqual(['jaeger', 'otel-collector']);
    expect(byProfile('metrics')).toEqual(['prometheus']);
    // One port for both instances: only the proxy publishes Stepwise.
    expect(services.proxy!.ports).toEqual(['0.0.0.0:${STEPWISE_PORT:-8080}:8080']);
    expect(services['stepwise-1']!.ports).toBeUndefined();
    const nginx = read('deploy/nginx.conf');
    for (const instance of ['stepwise-1', 'stepwise-2']) {
      expect(nginx).toContain(`server ${instance}:8787`);
      expect(read('deploy/prometheus.yml')).toContain(`${instance}:8787`);
      expect(services[instance]!.build).toBe('.');
      expect(services[instance]!.depends_on).toMatchObject({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
      expect(services[instance]!.volumes).toContain('stepwise-data:/data');
    }
    expect(nginx).toMatch(/proxy_set_header Upgrade \$http_upgrade/);
    for (const volume of Object.values(services).flatMap((service) => service.volumes ?? [])) {
      const source = volume.split(':')[0]!;
      if (!source.startsWith('.')) expect(Object.keys(compose.volumes), volume).toContain(source);
      else expect(() => read(source), volume).not.toThrow();
    }
  });

  it('passes the Compose Specification’s schema and the linter’s checks (each published port names its interface)', () => {
    // Schema validation always runs; the rules off are matters of key order only.
    const order = ['service-keys-order', 'services-alphabetical-order', 'top-level-properties-order'];
    const linter = new DCLinter({ rules: Object.fromEntries(order.map((rule) => [rule, 0])), quiet: true, debug: false, exclude: [] });
    const [result] = linter.lintFiles([join(root, 'compose.yaml')], false);
    const messages: Array<{ type: string; rule: string; message: string }> = result!.messages;
    expect(messages.filter((message) => message.type === 'error').map((message) => `${message.rule}: ${message.message}`)).toEqual([]);
    // Only the app is published beyond this machine; the profiles' own pages stay on loopback.
    const published = Object.values(services).flatMap((service) => service.ports ?? []);
    expect(published.filter((port) => !port.startsWith('127.0.0.1:'))).toEqual(['0.0.0.0:${STEPWISE_PORT:-8080}:8080']);
  });

  it('sets only variables the server knows, and with .env.example filled in they make a configuration it accepts', () => {
    for (const instance of ['stepwise-1', 'stepwise-2']) {
      const environment = services[instance]!.environment!;
      expect(Object.keys(environment).filter((name) => !ENVIRONMENT_VARIABLES.includes(name))).toEqual([]);
      const resolved = Object.fromEntries(Object.entries(environment).map(([name, value]) => [name, interpolate(String(value), exampleValues)]));
      const config = loadConfig({ ...exampleValues, ...resolved }, { promptsDir: 'prompts' });
      expect(config).toMatchObject({ host: '0.0.0.0', auth: { mode: 'token' }, cluster: { instanceId: instance, redisUrl: 'redis://redis:6379' } });
      expect(exposureProblem(config)).toBeUndefined();
    }
    expect(() => interpolate(String(services['stepwise-1']!.environment!.AUTH_TOKEN), {})).toThrow(/set AUTH_TOKEN in \.env/);
  });

  it('.env.example names only variables the server or compose.yaml reads', () => {
    expect(exampleVariables.filter((name) => !ENVIRONMENT_VARIABLES.includes(name) && !interpolated.has(name))).toEqual([]);
    expect(exampleVariables).toEqual(expect.arrayContaining(['AUTH_TOKEN', 'POSTGRES_PASSWORD', 'LLM_PROVIDER', 'METRICS_TOKEN']));
  });
});

describe('the Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('builds on BASE_IMAGE (Node 22 slim by default), in two stages, and runs as a non-root user with a liveness check and a data volume', () => {
    expect(dockerfile).toMatch(/^ARG BASE_IMAGE=node:22-[a-z]+-slim$/m);
    expect(dockerfile.match(/^FROM \$\{BASE_IMAGE\}/gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/pnpm@10 deploy --legacy --prod/);
    expect(dockerfile).toMatch(/^USER stepwise$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK [\s\S]*\/api\/health\/live/m);
    expect(dockerfile).toMatch(/^VOLUME \/data$/m);
    expect(dockerfile).toMatch(/^ENV .*HOST=0\.0\.0\.0/m);
  });
});
