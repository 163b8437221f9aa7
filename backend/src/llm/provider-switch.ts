import type { Config } from '../config/config.ts';
import type { CompletionRequest, CompletionResult, LlmClient } from './llm-client.ts';

/**
 * The model adapter of the provider the settings name now. A server started without an endpoint
 * answers with the demo model until an admin sets one in the app, and with the real model from
 * the next call on; each adapter is made when it is first needed.
 */
export class ProviderSwitch implements LlmClient {
  private demo: LlmClient | undefined;
  private real: LlmClient | undefined;

  constructor(
    private readonly config: Config,
    private readonly make: { demo: () => LlmClient; real: () => LlmClient },
  ) {}

  private get current(): LlmClient {
    if (this.config.llm.provider === 'demo') {
      this.demo ??= this.make.demo();
      return this.demo;
    }
    this.real ??= this.make.real();
    return this.real;
  }

  get modelName(): string {
    return this.current.modelName;
  }

  get isDemo(): boolean {
    return this.current.isDemo;
  }

  complete<T = unknown>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
    return this.current.complete(request);
  }
}
