export * from './client-messages.ts';
export * from './server-events.ts';
export * from './rest.ts';
export * from './format.ts';
export * from './errors.ts';
export * from './sharing.ts';
export * from './settings.ts';
export * from './streaming-prose.ts';
