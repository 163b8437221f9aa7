import type { Attributes, Histogram, Meter } from '@opentelemetry/api';
import type { TokenUsage } from '../llm/llm-client.ts';

/** The GenAI client metrics of the OpenTelemetry semantic conventions, one record per model call. */
export interface GenAiMetrics {
  /** One model call: its attributes (operation, provider, request and response model, error.type), how long it took, its tokens. */
  record(attributes: Attributes, seconds: number, usage: TokenUsage | undefined): void;
}

/** The buckets the conventions advise for gen_ai.client.token.usage and gen_ai.client.operation.duration. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/**
 * The GenAI client metrics (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`) on a
 * meter of the SDK's meter provider, which exports them as OTEL_METRICS_EXPORTER says.
 */
export function genAiMetrics(meter: Meter): GenAiMetrics {
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
  };
}
