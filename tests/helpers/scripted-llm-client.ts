import type { CompletionRequest, CompletionResult, LlmClient } from '@stepwise/backend';

/** One scripted answer: text (streamed in words), tool calls, data for a schema, or a failure. */
export interface ScriptedAnswer {
  text?: string;
  toolCalls?: { name: string; arguments: Record<string, unknown>; id?: string }[];
  parsed?: unknown;
  error?: Error;
  /** Never answer: wait until the call is aborted. */
  hang?: boolean;
}

/**
 * An in-process model for unit tests of a strategy's logic: it answers from a script by purpose
 * (or in order), records every request, and honours the signal like a real adapter.
 */
export class ScriptedLlmClient implements LlmClient {
  readonly modelName = 'scripted (in process)';
  readonly isDemo = false;
  readonly requests: CompletionRequest<unknown>[] = [];
  private readonly queue: ScriptedAnswer[] = [];
  private readonly waiting = new Set<() => void>();

  constructor(private readonly byPurpose: (request: CompletionRequest<unknown>, index: number) => ScriptedAnswer | undefined = () => undefined) {}

  /** Answers the next calls with these, in order, before `byPurpose` is asked. */
  enqueue(...answers: ScriptedAnswer[]): this {
    this.queue.push(...answers);
    return this;
  }

  /** The purposes of the calls so far, in order. */
  purposes(): string[] {
    return this.requests.map((request) => request.purpose);
  }

  /** Resolves once `count` calls have been made. */
  async untilCalls(count: number): Promise<void> {
    while (this.requests.length < count) await new Promise<void>((resolve) => this.waiting.add(resolve));
  }

  async complete<T = unknown>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
    const index = this.requests.push(request as CompletionRequest<unknown>) - 1;
    for (const wake of [...this.waiting]) {
      this.waiting.delete(wake);
      wake();
    }
    const answer = this.queue.shift() ?? this.byPurpose(request as CompletionRequest<unknown>, index) ?? { text: '' };
    if (answer.hang) {
      await new Promise<never>((_, reject) => {
        const abort = () => reject(request.signal.reason ?? new DOMException('Aborted', 'AbortError'));
        if (request.signal.aborted) abort();
        else request.signal.addEventListener('abort', abort, { once: true });
      });
    }
    request.signal.throwIfAborted();
    if (answer.error) throw answer.error;
    const text = answer.text ?? '';
    for (const piece of text.match(/\S+\s*|\s+/g) ?? []) request.onDelta?.(piece);
    const toolCalls = (answer.toolCalls ?? []).map((call, at) => ({
      id: call.id ?? `call_${index}_${at}`,
      name: call.name,
      arguments: JSON.stringify(call.arguments),
    }));
    const parsed = request.schema ? request.schema.zod.parse(answer.parsed) : undefined;
    return { text, toolCalls, ...(request.schema ? { parsed } : {}) } as CompletionResult<T>;
  }
}
