import type * as Sdk from '@restatedev/restate-sdk';

let loaded: typeof Sdk | undefined;

/**
 * The Restate SDK, loaded when the Restate engine starts (RUN_ENGINE=restate) rather than at every
 * start: a server that runs its runs in-process never pays its start-up time and memory.
 */
export async function loadRestateSdk(): Promise<typeof Sdk> {
  // The SDK needs Promise.withResolvers (Node 22+): the standard polyfill, for Node 20.
  // @ts-expect-error: the polyfill has no types; it is imported for its effect on Promise.
  await import('core-js/actual/promise/with-resolvers.js');
  loaded ??= await import('@restatedev/restate-sdk');
  return loaded;
}

/** The SDK, for code that runs inside a workflow (so after the engine started and loaded it). */
export function restateSdk(): typeof Sdk {
  if (!loaded) throw new Error('The Restate SDK is used before the Restate engine started');
  return loaded;
}
