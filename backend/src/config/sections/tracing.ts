import { z } from 'zod';
import { boolean, section, url } from '../env-values.ts';
import { INSTANCE_ID } from './store.ts';

/** The OTEL_* variables the OpenTelemetry SDK reads itself (beyond those of the section below), as documented. */
export const OTEL_SDK_VARIABLES = [
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_PROPAGATORS',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_METRICS_EXPORTER',
  'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
  'OTEL_METRIC_EXPORT_INTERVAL',
];

/**
 * OpenTelemetry: the SDK reads every OTEL_* variable itself; these only say whether it starts (as the
 * SDK would export) and what spans may hold beyond that. Tracing is on when OTEL_TRACES_EXPORTER
 * names an exporter, or (unset) an OTLP endpoint is given, and OTEL_SDK_DISABLED is not true.
 * Everything else (exporter, protocol, endpoint, headers, resource, sampler, propagators,
 * batching, metrics) the OpenTelemetry SDK reads itself.
 */
export const tracingSection = section(
  z.object({
    OTEL_SDK_DISABLED: boolean.default(false),
    OTEL_TRACES_EXPORTER: z.string().trim().toLowerCase().optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().trim().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().trim().optional(),
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: boolean.default(false),
    INSTANCE_ID: INSTANCE_ID.optional(),
    TRACE_URL_TEMPLATE: url.refine((value) => value.includes('%7Btrace_id%7D') || value.includes('{trace_id}'), 'must contain {trace_id}').optional(),
  }),
  (env) => {
    const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim()) ?? [];
    const on = env.OTEL_TRACES_EXPORTER ? exporters[0] !== 'none' : Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
    return {
      /** OpenTelemetry tracing; undefined when off. */
      tracing:
        on && !env.OTEL_SDK_DISABLED
          ? {
              /** Prompts, replies and tool arguments on spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
              captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
              /** INSTANCE_ID, when set: the resource's service.instance.id (else one per process). */
              instanceId: env.INSTANCE_ID,
            }
          : undefined,
      /** A link to a run's trace, `{trace_id}` in it (TRACE_URL_TEMPLATE). */
      traceUrlTemplate: env.TRACE_URL_TEMPLATE?.replaceAll('%7Btrace_id%7D', '{trace_id}'),
    };
  },
);
