import { randomUUID } from 'node:crypto';
import type { TextMapPropagator } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/config.ts';

/**
 * The resource every span carries: OTEL_RESOURCE_ATTRIBUTES (`deployment.environment.name=prod`
 * and the rest, as set), `service.name` (OTEL_SERVICE_NAME), `service.version`, and
 * `service.instance.id` (INSTANCE_ID, else one per process).
 */
export async function tracingResource(config: TracingConfig, version: string): Promise<Resource> {
  const { resourceFromAttributes } = await import('@opentelemetry/resources');
  return resourceFromAttributes({
    ...config.resourceAttributes,
    'service.name': config.serviceName,
    'service.version': version,
    'service.instance.id': config.instanceId ?? randomUUID(),
  });
}

/** The sampler OTEL_TRACES_SAMPLER names (with OTEL_TRACES_SAMPLER_ARG for a ratio), built from the SDK's own. */
export async function tracingSampler(config: TracingConfig): Promise<Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace');
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(config.samplerRatio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.samplerRatio) });
    default: {
      const unknown: never = config.sampler;
      throw new Error(`Unknown sampler ${String(unknown)}`);
    }
  }
}

/** The propagator OTEL_PROPAGATORS names (W3C trace context and baggage by default), made the global one. */
export async function tracingPropagator(config: TracingConfig): Promise<TextMapPropagator> {
  const [{ CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator }, api] = await Promise.all([
    import('@opentelemetry/core'),
    import('@opentelemetry/api'),
  ]);
  const propagator = new CompositePropagator({
    propagators: config.propagators.map((name) => (name === 'baggage' ? new W3CBaggagePropagator() : new W3CTraceContextPropagator())),
  });
  api.propagation.setGlobalPropagator(propagator);
  return propagator;
}
