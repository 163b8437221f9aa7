/** The logging port: pino's shape, so Fastify's logger fits and tests can pass a silent one. */
export interface Logger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
  child(bindings: Record<string, unknown>): Logger;
  /** Whether a level would be written (pino has it); lets hot paths skip building a debug line. */
  isLevelEnabled?(level: string): boolean;
}
