import type { CompletionReason } from '@stepwise/shared-types';
import type { LlmClient, LlmMessage } from '../llm/llm-client.ts';
import type { Logger } from '../logger.ts';
import type { PromptProvider } from '../prompts/prompt-provider.ts';
import type { ToolRegistry } from '../tools/tool-registry.ts';
import type { AgentControl } from './agent-control.ts';
import type { EventSink } from './event-sink.ts';
import type { RunEvents } from './run-events.ts';

/** What a run is asked to do. */
export interface RunInput {
  runId: string;
  sessionId: string;
  question: string;
  /** The session's earlier turns, oldest first. */
  history: LlmMessage[];
  maxSteps: number;
  /** Names of the tools enabled for this run. */
  toolNames: string[];
}

/**
 * Where a run is; the runner reads it when the run ends early (stop, error) to report the step and
 * keep the finished parts of the transcript.
 */
export interface RunProgress {
  step: number;
  /** Messages of the run's completed phases, ready to join the session history. */
  transcript: LlmMessage[];
}

/** Everything a strategy works with. */
export interface RunContext {
  llm: LlmClient;
  tools: ToolRegistry;
  prompts: PromptProvider;
  control: AgentControl;
  sink: EventSink;
  events: RunEvents;
  progress: RunProgress;
  inputTimeoutMs: number;
  /** The session's files, one line each, for the reason prompt ('' when there are none). */
  filesManifest(): Promise<string>;
  logger: Logger;
  /** Saves what the strategy needs to go on after a restart while it waits for the user; clear once answered. */
  checkpoints: {
    save(state: unknown): Promise<void>;
    clear(): Promise<void>;
  };
}

/** How a run that was not stopped and did not fail ended. */
export interface RunSuccess {
  answer: string;
  steps: number;
  reason: CompletionReason;
}

/**
 * One agent strategy. `run` resolves when the run has an answer (or reached its step limit), and
 * rejects on stop (the signal's abort error), on input timeout (InputTimeoutError) or on failure.
 * Given `resume` (a state it saved through `context.checkpoints`), it goes on from there.
 */
export interface Strategy {
  readonly name: string;
  run(input: RunInput, context: RunContext, resume?: unknown): Promise<RunSuccess>;
}
