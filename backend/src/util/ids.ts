/** A session id as clients may send it: any UUID (case-insensitive). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The OpenTelemetry trace id of a run: its id's 32 hex digits (a run id is a UUID), so the trace
 * is named before any of its spans ends. Undefined for an id that is not a UUID.
 */
export function traceIdOfRun(runId: string): string | undefined {
  return UUID.test(runId) ? runId.replaceAll('-', '').toLowerCase() : undefined;
}
