import type { ClientMessage, ErrorEvent, LoggedEventBody, StoppedCall } from '@stepwise/shared-types';
import type { CompletionReason } from '@stepwise/shared-types';
import type { z } from 'zod';
import type { DemoResponder, LlmClient } from '../../llm/llm-client.ts';
import type { Logger } from '../../logger.ts';
import type { LlmImage, LlmMessage } from '../../messages.ts';
import type { PromptSamples, PromptSet } from '../../prompts/prompt-provider.ts';
import type { ToolRegistry } from '../../tools/tool-registry.ts';
import type { AgentControl } from './agent-control.ts';
import type { EventSink } from './event-sink.ts';
import type { RunEvents } from './run-events.ts';

/** What a run is asked to do; journaled (its history aside), so plain data. */
export interface RunInput {
  runId: string;
  sessionId: string;
  /** The strategy's name. */
  strategy?: string;
  question: string;
  /** Session images the message was sent with (file names): shown to the model with the question. */
  images?: string[];
  /** The session's earlier turns, oldest first. */
  history: LlmMessage[];
  maxSteps: number;
  /** Names of the tools enabled for this run. */
  toolNames: string[];
  /** The strategy's options, defaults applied. */
  options?: Record<string, unknown>;
  /** The run's own approval policies by tool (`chat.tool_approval`), under the server's rules. */
  toolApproval?: Record<string, 'auto' | 'ask' | 'deny'>;
  /** The most the run may cost in USD; it ends with `budget` before a model call would pass it. */
  maxCostUsd?: number;
  /** The queued message (sent during the run before) this run was started for. */
  messageId?: string;
}

/**
 * Where a run is; the kernel reads it when the run ends early (stop, error) to report the step and
 * keep the finished parts of the transcript.
 */
export interface RunProgress {
  step: number;
  /** Messages of the run's completed phases, ready to join the session history. */
  transcript: LlmMessage[];
  /** The calls of the step a stop interrupted, and what became of each (the stop receipt). */
  stoppedCalls?: StoppedCall[];
}

/**
 * Everything a strategy works with, in one bag: what the run is asked (its input and options), the
 * services (model, tools, its own prompts), and the run's controls, events and progress.
 */
export interface Run<O = Record<string, unknown>, P extends PromptSamples = PromptSamples> {
  readonly input: RunInput;
  readonly options: O;
  llm: LlmClient;
  tools: ToolRegistry;
  prompts: PromptSet<P>;
  control: AgentControl;
  sink: EventSink;
  events: RunEvents;
  progress: RunProgress;
  /** What an approval nobody answered in time does (APPROVAL_TIMEOUT_ACTION). */
  approvalTimeoutAction?: 'park' | 'deny' | 'stop';
  /** What a question nobody answered in time does (INPUT_TIMEOUT_ACTION); stop when not given. */
  inputTimeoutAction?: 'park' | 'stop';
  inputTimeoutMs: number;
  /** The session's files, one line each, for prompts ('' when there are none). */
  filesManifest(): Promise<string>;
  /** The session's notepad (the `notepad` tool's notes), '' when empty or unreadable. */
  notepad(): Promise<string>;
  /** The session's files, for strategies that keep state in them (autonomous's todo list). */
  files: RunFiles;
  /** The images the message was sent with (`input.images`), read and scaled before the run began. */
  images?: LlmImage[];
  logger: Logger;
  /**
   * The run's journal. Model calls and tool calls are journaled by the kernel; a strategy journals
   * anything else it must not redo or that must come out the same when the run goes on from its
   * past (an id, a time, a random choice): `once` returns the recorded value when the past has one,
   * else runs `live` and records its value before the run goes on.
   */
  effects: {
    once<T>(kind: string, key: string, live: () => Promise<T>): Promise<{ value: T; replayed: boolean }>;
    has(kind: string, key: string): boolean;
    /** True when the past is another run's: this run continues it (not the same run after a restart). */
    readonly continues: boolean;
  };
}

/** Session files as a run reads and writes them: written as the agent's, under the run's id (`file_saved`). */
export interface RunFiles {
  /** The file's text, or undefined when the session has no such file. */
  read(name: string): Promise<string | undefined>;
  write(name: string, content: string): Promise<void>;
}

/** How a run that was not stopped and did not fail ended. */
export interface RunSuccess {
  answer: string;
  steps: number;
  reason: CompletionReason;
  /** With `unresolved`: what could not be done, in one sentence. */
  summary?: string;
}

/**
 * One strategy, whole: who it is (for the picker), its options, its prompts (templates in
 * `prompts/NAME/`, each with an example of its variables), the demo model's answers to its calls,
 * and its run. `run` resolves with the answer (or at its limit), and rejects on stop (the signal's
 * abort error), on input timeout (InputTimeoutError) or on failure; the kernel does the rest. A run
 * must be deterministic given its journal: after a restart, or when a user continues it, it runs
 * again from its start, with every recorded effect returned instead of done.
 */
export interface StrategyDefinition<O = Record<string, unknown>, P extends PromptSamples = PromptSamples> {
  readonly name: string;
  readonly label: string;
  readonly description: string;
  /** The options, defaults included; unknown options are refused (a strict zod object). */
  readonly options: z.ZodType<O>;
  readonly prompts: P;
  /** The demo model's answers to this strategy's calls (purposes `NAME.*`). */
  readonly demo: DemoResponder;
  /** Left out of the picker: plain chat, and examples for tests. */
  readonly hidden?: boolean;
  /**
   * How its runs look on the wire: `agent` (agent_start … one ending, the default) or `chat` (the
   * plain chat answer: assistant_message only, events without run id).
   */
  readonly wire?: 'agent' | 'chat';
  /** What the strategy adds to a session beyond its runs; the session asks it, never names it. */
  readonly session?: StrategySessionHooks;
  run(run: Run<O, P>): Promise<RunSuccess>;
}

/**
 * What a strategy adds to a session beyond its runs, declared in its own folder: the chat and file
 * layers ask the registry, and no strategy is named outside its folder but in the registry.
 */
export interface StrategySessionHooks {
  /** Session files the strategy reads back: every write of one (upload, tool, the strategy itself) is checked first; a check throws the reason. */
  fileChecks?: Readonly<Record<string, (text: string) => void>>;
  /** A snapshot's default label after the session's last run, from that run's events (a solver's " · loop 2 · expert_evaluator"). */
  snapshotLabel?(events: readonly LoggedEventBody[]): string;
  /** A person's edit of state the strategy keeps between runs (autonomous's `todos_set`). */
  clientMessages?: Readonly<Record<string, (message: ClientMessage, session: StrategySession) => Promise<ErrorEvent | undefined>>>;
}

/** What a strategy's session hook may do: write the session's files, log an event for every client. */
export interface StrategySession {
  readonly sessionId: string;
  writeFile(name: string, content: string): Promise<void>;
  emit(event: LoggedEventBody): Promise<void>;
}

/** The strategy of a run that names none. */
export const DEFAULT_STRATEGY = 'roa';

/** Any strategy, whatever its options and prompts. */
// biome-ignore lint/suspicious/noExplicitAny: strategies of any options and events share one registry
export type AnyStrategy = StrategyDefinition<any, any>;

/** Declares a strategy with its types inferred from its options and prompt examples. */
export function defineStrategy<O, P extends PromptSamples>(definition: StrategyDefinition<O, P>): StrategyDefinition<O, P> {
  return definition;
}

/** The run's question as its user turn, with the images the message was sent with. */
export function questionTurn(run: Pick<Run, 'input' | 'images'>): LlmMessage {
  return run.images?.length ? { role: 'user', content: run.input.question, images: run.images } : { role: 'user', content: run.input.question };
}
