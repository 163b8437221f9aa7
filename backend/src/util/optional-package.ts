import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS package that only some settings use (the cluster's PostgreSQL and Redis clients),
 * loaded the first time it is used rather than at every start: a server on the embedded store
 * never pays their start-up time and memory. It is what `import` would give, the package's
 * `module.exports`, from the same cache.
 */
export function optionalPackage<T>(name: string): T {
  return require(name) as T;
}
