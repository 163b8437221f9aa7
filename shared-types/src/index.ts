export * from './client-messages.ts';
export * from './server-events.ts';
