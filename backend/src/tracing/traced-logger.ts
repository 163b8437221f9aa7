import type { Logger } from '../logger.ts';
import { traceIdOfRun } from '../util/ids.ts';

/** The OpenTelemetry API, as tracing loaded it. */
type Api = typeof import('@opentelemetry/api');

/**
 * The logger with each line tied to its trace, as OpenTelemetry's log correlation names it:
 * `trace_id`, `span_id` and `trace_flags` of the span active where the line is written (a model
 * call's, in the model client), else the `trace_id` of the run the line is about (its `run_id`,
 * given or bound), so a log search and a trace find each other.
 */
export function tracedLogger(logger: Logger, api: Api, bindings: Record<string, unknown> = {}): Logger {
  const ids = (object: object): Record<string, string> => {
    const active = api.trace.getActiveSpan()?.spanContext();
    if (active && api.trace.isSpanContextValid(active))
      return { trace_id: active.traceId, span_id: active.spanId, trace_flags: `0${active.traceFlags.toString(16)}`.slice(-2) };
    const runId = (object as { run_id?: unknown }).run_id ?? bindings.run_id;
    const traceId = typeof runId === 'string' ? traceIdOfRun(runId) : undefined;
    return traceId ? { trace_id: traceId } : {};
  };
  return {
    debug: (object, message) => logger.debug({ ...ids(object), ...object }, message),
    info: (object, message) => logger.info({ ...ids(object), ...object }, message),
    warn: (object, message) => logger.warn({ ...ids(object), ...object }, message),
    error: (object, message) => logger.error({ ...ids(object), ...object }, message),
    child: (childBindings) => tracedLogger(logger.child(childBindings), api, { ...bindings, ...childBindings }),
    ...(logger.isLevelEnabled ? { isLevelEnabled: (level: string) => logger.isLevelEnabled!(level) } : {}),
  };
}
