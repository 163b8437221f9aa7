import type { DiagLogger } from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/config.ts';
import type { Logger } from '../logger.ts';

/**
 * The OpenTelemetry SDK as started: its components are the API's global ones until it shuts down
 * (one per process: a second server started in the same process while the first traces, as a test
 * may, traces through the first one's).
 */
export interface OtelSdk {
  /** Sends what is left, stops, and unregisters the global components (so a later start registers its own). */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry Node SDK, which reads the standard OTEL_* variables itself: the span
 * exporter (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_* endpoint, protocol, headers), batching
 * (OTEL_BSP_*), the sampler (OTEL_TRACES_SAMPLER, _ARG), the propagators (OTEL_PROPAGATORS), the
 * metric readers (OTEL_METRICS_EXPORTER, OTEL_METRIC_EXPORT_INTERVAL), and the resource
 * (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME). Stepwise adds to the resource only what the
 * environment does not say: `service.name` stepwise (unless set), `service.version`, and
 * `service.instance.id` (INSTANCE_ID, else one per process). Spans take their ids from
 * `idGenerator`; the SDK's complaints go to the log.
 */
export async function startOtelSdk(config: TracingConfig, options: { version: string; logger: Logger; idGenerator: IdGenerator }): Promise<OtelSdk> {
  const [api, { NodeSDK }, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/resources'),
  ]);
  api.diag.setLogger(diagnostics(options.logger), { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true });
  const instance: import('@opentelemetry/resources').ResourceDetector = config.instanceId
    ? { detect: () => ({ attributes: { 'service.instance.id': config.instanceId } }) }
    : resources.serviceInstanceIdDetector;
  const sdk = new NodeSDK({
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({ 'service.name': 'stepwise', 'service.version': options.version })),
    // Later detectors win: what the environment says comes last.
    resourceDetectors: [
      resources.hostDetector,
      resources.osDetector,
      resources.processDetector,
      instance,
      resources.resourceAttributesEnvDetector,
      resources.serviceNameEnvDetector,
    ],
    idGenerator: options.idGenerator,
    instrumentations: [],
    // Log lines go to the log (with their trace ids), not over OTLP.
    logRecordProcessors: [],
  });
  sdk.start();
  return {
    async shutdown() {
      try {
        await sdk.shutdown();
      } finally {
        api.trace.disable();
        api.metrics.disable();
        api.logs.disable();
        api.propagation.disable();
        api.context.disable();
        api.diag.disable();
      }
    },
  };
}

/** The SDK's diagnostics (an unknown sampler name, a failed export) as log lines. */
function diagnostics(logger: Logger): DiagLogger {
  const line =
    (level: 'warn' | 'error' | 'info' | 'debug') =>
    (message: string, ...args: unknown[]) =>
      logger[level]({ component: 'opentelemetry', ...(args.length > 0 ? { details: args.map(String) } : {}) }, message);
  return { error: line('error'), warn: line('warn'), info: line('info'), debug: line('debug'), verbose: line('debug') };
}
