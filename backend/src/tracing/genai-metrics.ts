import type { Attributes, Histogram } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { TracingConfig } from '../config/config.ts';
import type { TokenUsage } from '../llm/llm-client.ts';

/** The GenAI client metrics of the OpenTelemetry semantic conventions, one record per model call. */
export interface GenAiMetrics {
  /** One model call: its attributes (operation, provider, request and response model, error.type), how long it took, its tokens. */
  record(attributes: Attributes, seconds: number, usage: TokenUsage | undefined): void;
  shutdown(): Promise<void>;
}

/** The buckets the conventions advise for gen_ai.client.token.usage and gen_ai.client.operation.duration. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/**
 * Starts the GenAI client metrics (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`),
 * exported over OTLP/HTTP (the traces' protocol) or to the console, every OTEL_METRIC_EXPORT_INTERVAL.
 */
export async function startGenAiMetrics(config: TracingConfig, resource: Resource): Promise<GenAiMetrics | undefined> {
  const metrics = config.metrics;
  if (!metrics) return undefined;
  const { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader } = await import('@opentelemetry/sdk-metrics');
  const exporter =
    metrics.exporter === 'console'
      ? new ConsoleMetricExporter()
      : config.protocol === 'http/json'
        ? new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter({ url: metrics.endpoint, headers: config.headers })
        : new (await import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter({ url: metrics.endpoint, headers: config.headers });
  const provider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: metrics.intervalMs, exportTimeoutMillis: Math.min(30_000, metrics.intervalMs) }),
    ],
  });
  const meter = provider.getMeter('stepwise');
  const tokens: Histogram = meter.createHistogram('gen_ai.client.token.usage', {
    description: 'Number of input and output tokens used',
    unit: '{token}',
    advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
  });
  const duration: Histogram = meter.createHistogram('gen_ai.client.operation.duration', {
    description: 'GenAI operation duration',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  return {
    record(attributes, seconds, usage) {
      duration.record(seconds, attributes);
      if (!usage) return;
      tokens.record(usage.promptTokens, { ...attributes, 'gen_ai.token.type': 'input' });
      tokens.record(usage.completionTokens, { ...attributes, 'gen_ai.token.type': 'output' });
    },
    shutdown: () => provider.shutdown(),
  };
}
