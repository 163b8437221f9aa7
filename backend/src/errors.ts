import type { TokenUsage } from './messages.ts';
import type { ErrorCode } from '@stepwise/shared-types';

/**
 * The codes the backend throws with, by name; every value is one of shared-types' ERROR_CODES
 * (the one list, which the web app reads too).
 */
export const ERROR_CODE = {
  config: 'config_error',
  prompt: 'prompt_error',
  model: 'model_error',
  modelTimeout: 'model_timeout',
  toolNotFound: 'unknown_tool',
  toolArguments: 'invalid_tool_arguments',
  toolExecution: 'tool_failed',
  inputTimeout: 'input_timeout',
  noPendingInput: 'no_pending_input',
  runActive: 'run_active',
  noActiveRun: 'no_active_run',
  unknownStrategy: 'unknown_strategy',
  invalidMessage: 'invalid_message',
  invalidFileName: 'invalid_file_name',
  fileNotFound: 'file_not_found',
  fileTooLarge: 'file_too_large',
  tooManyFiles: 'too_many_files',
  notText: 'not_text',
  invalidFileContent: 'invalid_file_content',
  invalidPdf: 'invalid_pdf',
  encryptedPdf: 'encrypted_pdf',
  tooManyPages: 'too_many_pages',
  invalidImage: 'invalid_image',
  visionUnsupported: 'vision_unsupported',
  tooManyImages: 'too_many_images',
  internal: 'internal_error',
  engineUnavailable: 'engine_unavailable',
  signInRefused: 'sign_in_refused',
} as const satisfies Record<string, ErrorCode>;
export type ErrorCodeValue = (typeof ERROR_CODE)[keyof typeof ERROR_CODE];

/** Base of every error Stepwise throws on purpose. */
export class StepwiseError extends Error {
  readonly code: ErrorCodeValue;
  /** Whether the message is safe to show to a client as it is. */
  readonly expose: boolean;

  constructor(code: ErrorCodeValue, message: string, options?: { cause?: unknown; expose?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.expose = options?.expose ?? true;
  }
}

/** A setting is missing or invalid; startup stops. */
export class ConfigError extends StepwiseError {
  constructor(message: string) {
    super(ERROR_CODE.config, message);
  }
}

/** A sign-in was refused: the provider's answer failed a check (a signature, a claim); the message says which. */
export class SignInError extends StepwiseError {
  constructor(message: string, cause?: unknown) {
    super(ERROR_CODE.signInRefused, message, { cause });
  }
}

/** A prompt template is missing or refers to an unknown variable. */
export class PromptError extends StepwiseError {
  constructor(message: string, cause?: unknown) {
    super(ERROR_CODE.prompt, message, { cause });
  }
}

/** The model endpoint failed (after retries, where retrying made sense). */
export class ModelError extends StepwiseError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** How long the server asked us to wait before retrying, when it said. */
  readonly retryAfterMs: number | undefined;
  /** What the endpoint said in its own words: logged, never sent to clients. */
  readonly detail: string | undefined;
  /**
   * `output`: the endpoint answered, but the answer was unusable (data off its schema, cut at the
   * output limit); `refusal`: the model declined to answer (its refusal field); `request`: the
   * endpoint refused this request (a 400, a template that cannot render it). None says anything
   * of the endpoint's health.
   */
  readonly category: 'output' | 'refusal' | 'request' | undefined;
  /** What the replies that were answered and then rejected cost: they count in the run's spending all the same. */
  readonly spent: RejectedSpending | undefined;
  constructor(
    message: string,
    options: {
      status?: number;
      retryable?: boolean;
      retryAfterMs?: number;
      cause?: unknown;
      detail?: string;
      category?: 'output' | 'refusal' | 'request';
      spent?: RejectedSpending;
      /** model_timeout when the call ran out of time (LLM_TOTAL_TIMEOUT_MS). */
      code?: typeof ERROR_CODE.model | typeof ERROR_CODE.modelTimeout | typeof ERROR_CODE.visionUnsupported;
    } = {},
  ) {
    super(options.code ?? ERROR_CODE.model, message, { cause: options.cause });
    this.status = options.status;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
    this.detail = options.detail;
    this.category = options.category;
    this.spent = options.spent;
  }
}

/** The tokens and cost of replies a call received but could not use. */
export interface RejectedSpending {
  usage?: TokenUsage;
  costUsd?: number | null;
  model?: string;
}

/** A tool call named a tool that is not enabled or does not exist. */
export class ToolNotFoundError extends StepwiseError {
  constructor(name: string) {
    super(ERROR_CODE.toolNotFound, `Unknown tool "${name}"`);
  }
}

/** A tool call's arguments are not valid JSON or do not match the tool's schema. */
export class ToolArgumentsError extends StepwiseError {
  constructor(message: string) {
    super(ERROR_CODE.toolArguments, message);
  }
}

/** A tool ran and failed; the message goes back to the model. */
export class ToolExecutionError extends StepwiseError {
  constructor(message: string, cause?: unknown) {
    super(ERROR_CODE.toolExecution, message, { cause });
  }
}

/** A session file could not be named, found, read or written; the message says why. */
export class FileError extends StepwiseError {
  readonly status: 400 | 404 | 413;
  constructor(
    code:
      | typeof ERROR_CODE.invalidFileName
      | typeof ERROR_CODE.fileNotFound
      | typeof ERROR_CODE.fileTooLarge
      | typeof ERROR_CODE.tooManyFiles
      | typeof ERROR_CODE.notText
      | typeof ERROR_CODE.invalidFileContent
      | typeof ERROR_CODE.invalidPdf
      | typeof ERROR_CODE.encryptedPdf
      | typeof ERROR_CODE.tooManyPages
      | typeof ERROR_CODE.invalidImage
      | typeof ERROR_CODE.tooManyImages,
    message: string,
  ) {
    super(code, message);
    this.status = code === ERROR_CODE.fileNotFound ? 404 : code === ERROR_CODE.fileTooLarge ? 413 : 400;
  }
}

/** Nobody answered the agent's question in time. */
export class InputTimeoutError extends StepwiseError {
  constructor(timeoutMs: number) {
    super(ERROR_CODE.inputTimeout, `No answer within ${Math.round(timeoutMs / 1000)} s`);
  }
}

/** The run's next model call would pass its cost budget (`max_cost_usd`): the run ends with "budget". Not a failure. */
export class CostBudgetReached extends Error {
  constructor(
    readonly budgetUsd: number,
    readonly spentUsd: number,
  ) {
    super(`The run's cost budget of $${budgetUsd} would be passed by its next model call (spent so far: $${spentUsd})`);
    this.name = 'CostBudgetReached';
  }
}

/** True when `error` is the rejection of an aborted signal (stop, shutdown). */
export function isAbortError(error: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'APIUserAbortError');
}

/**
 * Turns anything thrown into what a client may see: a stable code and a readable message. Only
 * messages written for users pass (StepwiseError with `expose`); anything else, a provider's own
 * words included, stays in the logs.
 */
export function toClientError(error: unknown): { code: ErrorCode; message: string } {
  if (error instanceof StepwiseError && error.expose) return { code: error.code, message: error.message };
  return { code: ERROR_CODE.internal, message: 'Internal error' };
}
