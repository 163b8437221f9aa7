import type { ModelHealth } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, isAbortError, ModelError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { TOKENS } from '../tokens.ts';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type OpenAI from 'openai';
import { aroundCalls, type LlmClient } from './llm-client.ts';
import { createModelWire, endpointOf } from './model-wire.ts';

const PROBE_TIMEOUT_MS = 5_000;

/**
 * How the model endpoint is doing, as users see it in the header: learnt at startup (its model
 * list is asked for), then from every call (a failure says what to check, a success clears it).
 */
@injectable()
export class ModelHealthMonitor {
  private state: ModelHealth = { status: 'unknown' };
  private readonly listeners = new Set<(health: ModelHealth) => void>();
  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Logger) private readonly logger: Logger,
  ) {
    if (config.llm.provider === 'demo') this.state = DEMO_HEALTH();
  }

  /** The endpoint's base URL, fit to show; undefined for the demo model. */
  get endpoint(): string | undefined {
    return this.config.llm.provider === 'demo' ? undefined : endpointOf(this.config);
  }

  /** The endpoint or its key changed (in the app's settings): what was learnt of the old one no longer holds; the new one is checked. */
  async recheck(): Promise<ModelHealth> {
    this.set(this.config.llm.provider === 'demo' ? DEMO_HEALTH() : { status: 'unknown' });
    return this.probe();
  }

  get current(): ModelHealth {
    return this.state;
  }

  /** Calls `listener` whenever the health changes. */
  onChange(listener: (health: ModelHealth) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The model client as the app uses it: every call's outcome updates the health. */
  track(llm: LlmClient): LlmClient {
    return aroundCalls(llm, async (request, call) => {
      try {
        const result = await call();
        this.set({ status: 'ok', checked_at: now() });
        return result;
      } catch (error) {
        // An unusable answer (data off its schema) is the model's, not the endpoint's health.
        if (error instanceof ModelError && error.category === undefined && !isAbortError(error, request.signal)) this.set(this.fromError(error));
        throw error;
      }
    });
  }

  /**
   * Asks the endpoint for its model list through the SDK (the same client, proxy and auth as the
   * calls), so a wrong URL or key shows before the first message.
   */
  async probe(): Promise<ModelHealth> {
    if (this.config.llm.provider === 'demo' || !this.endpoint) return this.state;
    const names = this.config.llm.azure ? { url: 'AZURE_OPENAI_ENDPOINT', key: 'AZURE_OPENAI_API_KEY' } : { url: 'OPENAI_BASE_URL', key: 'OPENAI_API_KEY' };
    const { client, dispatcher } = this.probeClient();
    try {
      await client.models.list({ signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      if (this.state.status === 'unknown') this.set({ status: 'ok', checked_at: now() });
    } catch (error) {
      if (error instanceof APIError && (error.status === 401 || error.status === 403)) {
        this.set({ status: 'failing', message: `The endpoint refused the key (${error.status})`, hint: `Check ${names.key}`, checked_at: now() });
      } else if (error instanceof APIError && error.status !== undefined && error.status >= 500) {
        this.set({ status: 'failing', message: `The endpoint answered ${error.status}`, hint: 'Check the model server’s logs', checked_at: now() });
      } else if (error instanceof APIConnectionError || error instanceof APIUserAbortError) {
        const timedOut = error instanceof APIConnectionTimeoutError || error instanceof APIUserAbortError;
        this.set({
          status: 'failing',
          message: `Could not reach ${this.endpoint} (${timedOut ? 'no answer within 5 s' : describeFetchFailure(error)})`,
          hint: `Check ${names.url} and that the model server is running`,
          checked_at: now(),
        });
      } else if (this.state.status === 'unknown') {
        // 404 from servers without a model list, or a list in another shape: it answers, which is what the probe asks.
        this.set({ status: 'ok', checked_at: now() });
      }
    } finally {
      await dispatcher.close().catch(() => undefined);
    }
    return this.state;
  }

  /** A client for one probe: no retries, the probe's own clock, a pool closed when it is done. */
  private probeClient(): { client: OpenAI; dispatcher: { close(): Promise<void> } } {
    const limits = { idleTimeoutMs: PROBE_TIMEOUT_MS, maxOutputChars: this.config.llm.maxOutputChars };
    return createModelWire(this.config, this.logger, limits, { maxRetries: 0, timeoutMs: PROBE_TIMEOUT_MS });
  }

  private fromError(error: ModelError): ModelHealth {
    const status = error.status;
    const [url, key] = this.config.llm.azure ? ['AZURE_OPENAI_ENDPOINT', 'AZURE_OPENAI_API_KEY'] : ['OPENAI_BASE_URL', 'OPENAI_API_KEY'];
    const hint =
      status === 401 || status === 403
        ? `Check ${key}`
        : status === 404
          ? `Check LLM_MODEL and ${url}`
          : status === 429
            ? 'Wait a moment, or check the account’s quota'
            : error.code === ERROR_CODE.modelTimeout
              ? 'The model server is slow or stuck; check it'
              : status === undefined
                ? `Check ${url} and that the model server is running`
                : 'Check the model server’s logs';
    return { status: 'failing', message: error.message, hint, checked_at: now() };
  }

  private set(next: ModelHealth): void {
    const changed = next.status !== this.state.status || next.message !== this.state.message;
    this.state = next;
    if (!changed) return;
    this.logger[next.status === 'failing' ? 'warn' : 'info']({ health: next.status, detail: next.message }, 'model health changed');
    for (const listener of this.listeners) listener(next);
  }
}

const DEMO_HEALTH = (): ModelHealth => ({ status: 'ok', message: 'The offline demo model is built in', checked_at: now() });

function now(): string {
  return new Date().toISOString();
}

function describeFetchFailure(error: unknown): string {
  let cause: unknown = (error as { cause?: unknown })?.cause;
  for (let depth = 0; depth < 4 && cause; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ECONNREFUSED') return 'connection refused';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host';
    cause = (cause as { cause?: unknown }).cause;
  }
  return 'the request failed';
}
