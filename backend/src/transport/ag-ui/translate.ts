import { type BaseEvent, EventType, type Interrupt, type TokenUsage } from '@ag-ui/core';
import type { LoggedEvent, ServerEvent } from '@stepwise/shared-types';
import { DEFAULT_STRATEGY } from '../../agent/kernel/strategy.ts';
import { questionText } from '../run-in-words.ts';
import { interruptOf } from './interrupts.ts';

/**
 * Stepwise's events for one run, as AG-UI events (docs/PROTOCOL.md, "AG-UI"). One translator
 * serves one AG-UI run (one POST): it opens with RUN_STARTED and closes with RUN_FINISHED (an
 * answer, a stop, or an interrupt for a question) or RUN_ERROR. Events of the Stepwise run logged
 * before the POST (a resumed run's plan, its to-dos) are taken in quietly, to rebuild the state
 * the run's STATE_SNAPSHOT starts from; nothing is written for them.
 */
export class AgUiTranslator {
  /** The Stepwise run being streamed (learned from its agent_start, or given for a resume). */
  runId: string | undefined;
  private ended = false;
  private started = false;
  /** Open text and reasoning messages, by stream (kind, branch, step): the AG-UI message id. */
  private readonly texts = new Map<string, { id: string; role: 'assistant' | 'reasoning'; written: string }>();
  /** Open steps by name, in the order they opened. */
  private readonly steps: string[] = [];
  /** The open turn step of each branch ('' for a run that does not branch). */
  private readonly turns = new Map<string, string>();
  private state: Record<string, unknown> = {};
  private stateSent = false;
  private readonly usage = new Map<string, TokenUsage>();
  /** Questions asked in this stream, as interrupts and in words. */
  private readonly questions: { interrupt: Interrupt; text: string }[] = [];
  private counter = 0;

  constructor(
    private readonly threadId: string,
    /** The AG-UI run id (RunAgentInput.runId). */
    private readonly aguiRunId: string,
    private readonly write: (event: BaseEvent) => void,
    /** Questions only as text: the AG-UI run then ends as a success, with no interrupt a client would hold on to. */
    private readonly questionsAsText = false,
  ) {}

  /** True once RUN_FINISHED or RUN_ERROR is written. */
  get done(): boolean {
    return this.ended;
  }

  /** Questions asked in this stream and not yet put in an interrupt. */
  get waiting(): boolean {
    return this.questions.length > 0;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.write({ type: EventType.RUN_STARTED, threadId: this.threadId, runId: this.aguiRunId } as BaseEvent);
    // A resumed run's stream starts from the state its earlier events built.
    if (Object.keys(this.state).length > 0) {
      this.stateSent = true;
      this.write({ type: EventType.STATE_SNAPSHOT, snapshot: structuredClone(this.state) } as BaseEvent);
    }
  }

  /** Takes in an event logged before this stream began: the state only. */
  absorb(event: ServerEvent): void {
    if (!this.belongs(event)) return;
    if (event.type === 'agent_update' && event.update_type === 'agent_start') this.runId = event.run_id;
    this.updateState(event);
  }

  /** Translates one live event. */
  take(event: ServerEvent): void {
    if (this.ended || !this.belongs(event)) return;
    if (!this.runId && event.type === 'agent_update' && event.update_type === 'agent_start') this.runId = event.run_id;
    if (!this.runId) return;
    this.start();
    switch (event.type) {
      case 'agent_update':
        return this.agentUpdate(event);
      case 'assistant_delta':
        return this.text('assistant', 'answer', '', event.delta);
      case 'assistant_message':
        return this.fullText('assistant', 'answer', '', event.content);
      case 'tool_start':
        return this.toolStart(event.tool_call_id, event.tool_name, event.arguments);
      case 'tool_complete':
        return this.toolResult(event.tool_call_id, event.result);
      case 'tool_error':
        return this.toolResult(event.tool_call_id, { error: event.error });
      case 'tool_progress':
        return this.custom('tool_progress', event);
      case 'response_complete':
        return this.finish({ type: 'success' });
      case 'error':
        if ('seq' in event) return this.fail(event.message, event.code);
        return;
      case 'file_saved':
      case 'file_deleted':
        return this.custom(event.type, event);
      default:
        return;
    }
  }

  /**
   * Ends the stream with an interrupt for every question waiting, when there are some. Each
   * question is also written as assistant text first, for clients that render no interrupts:
   * their next user message on the thread answers it.
   */
  interruptIfWaiting(): boolean {
    if (this.ended || this.questions.length === 0) return false;
    const questions = this.questions.splice(0);
    this.closeAll();
    for (const [index, question] of questions.entries()) this.fullText('assistant', 'question', String(index), question.text);
    if (this.questionsAsText) this.state.status = 'waiting';
    this.finish(this.questionsAsText ? { type: 'success' } : { type: 'interrupt', interrupts: questions.map((question) => question.interrupt) });
    return true;
  }

  /** Ends the stream with an error of the server's own (the run itself goes on). */
  abort(message: string, code: string): void {
    if (this.ended) return;
    this.start();
    this.fail(message, code);
  }

  /** Whether an event is part of the run this stream shows (events without a run id: files changed during it). */
  private belongs(event: ServerEvent): boolean {
    const runId = 'run_id' in event ? event.run_id : undefined;
    if (runId === undefined) return event.type === 'file_saved' || event.type === 'file_deleted' ? this.runId !== undefined : false;
    return this.runId === undefined || runId === this.runId;
  }

  private agentUpdate(event: Extract<ServerEvent, { type: 'agent_update' }>): void {
    const node = event.node_id ?? '';
    switch (event.update_type) {
      case 'agent_start':
        this.custom('agent_start', event);
        this.updateState(event);
        return;
      case 'agent_turn_start':
        this.closeTurn(node);
        this.turns.set(node, this.openStep(node ? `${node} · step ${event.step}` : `step ${event.step}`));
        return;
      case 'agent_reason_delta':
        return this.text('reasoning', 'reason', `${node}:${event.step}`, event.delta);
      case 'agent_reason':
        return this.fullText('reasoning', 'reason', `${node}:${event.step}`, event.content);
      case 'agent_observe_delta':
        return this.text('assistant', 'observe', `${node}:${event.step}`, event.delta);
      case 'agent_observe':
        return this.fullText('assistant', 'observe', `${node}:${event.step}`, event.content);
      case 'agent_message':
        return this.fullText('assistant', 'message', `${node}:${event.step}`, event.content);
      case 'agent_request_input':
        this.custom('agent_request_input', event);
        this.questions.push({ interrupt: interruptOf(event), text: questionText(event) });
        return;
      case 'agent_plan_step':
        this.updateState(event);
        if (event.status === 'running') this.openStep(`plan step ${event.index}`);
        else this.closeStep(`plan step ${event.index}`);
        return;
      case 'agent_stage_start':
        this.updateState(event);
        this.openStep(`${event.stage} · loop ${event.loop}`);
        return;
      case 'agent_stage_complete':
        this.custom('agent_stage_complete', event);
        this.updateState(event);
        this.closeStep(`${event.stage} · loop ${event.loop}`);
        return;
      case 'agent_task_start':
        this.openStep(`task ${event.task_id}`);
        return;
      case 'agent_task_complete':
        this.custom('agent_task_complete', event);
        this.closeTurn(event.task_id);
        this.closeStep(`task ${event.task_id}`);
        return;
      case 'agent_plan':
      case 'agent_todos':
      case 'agent_task_graph':
        this.updateState(event);
        return;
      case 'agent_usage':
        this.count(event);
        this.custom('agent_usage', event);
        return;
      case 'agent_completion':
        this.updateState(event);
        this.custom('agent_completion', event);
        return;
      case 'agent_stopped':
        this.updateState(event);
        this.custom('agent_stopped', event);
        this.finish({ type: 'cancelled' });
        return;
      case 'agent_error':
        this.custom('agent_error', event);
        this.fail(event.message, 'agent_error');
        return;
      default:
        this.custom(event.update_type, event);
        return;
    }
  }

  /** A strategy's state as AG-UI state: the first change as STATE_SNAPSHOT, later ones as STATE_DELTA. */
  private updateState(event: ServerEvent): void {
    if (event.type !== 'agent_update') return;
    const changes: Record<string, unknown> = {};
    switch (event.update_type) {
      case 'agent_start':
        Object.assign(changes, { run_id: event.run_id, strategy: event.strategy ?? DEFAULT_STRATEGY, status: 'running' });
        break;
      case 'agent_plan':
        changes.plan = { revision: event.revision, steps: event.steps };
        break;
      case 'agent_plan_step': {
        const plan = this.state.plan as { revision: number; steps: { index: number; status: string }[] } | undefined;
        const position = plan?.steps.findIndex((step) => step.index === event.index) ?? -1;
        if (!plan || position < 0) return;
        plan.steps[position]!.status = event.status;
        if (this.stateSent && !this.quietly()) this.writeDelta([{ op: 'replace', path: `/plan/steps/${position}/status`, value: event.status }]);
        return;
      }
      case 'agent_todos':
        changes.todos = event.todos;
        break;
      case 'agent_task_graph':
        changes.task_graph = { version: event.version, stages: event.stages };
        break;
      case 'agent_stage_start':
        changes.stage = { name: event.stage, loop: event.loop, status: 'running' };
        break;
      case 'agent_stage_complete':
        changes.stage = { name: event.stage, loop: event.loop, status: 'done' };
        break;
      case 'agent_completion':
        changes.status = 'completed';
        changes.ending = event.reason ?? 'answered';
        break;
      case 'agent_stopped':
        changes.status = 'stopped';
        changes.ending = event.reason ?? 'user';
        break;
      default:
        return;
    }
    Object.assign(this.state, changes);
    if (this.quietly()) return;
    if (!this.stateSent) {
      this.stateSent = true;
      this.write({ type: EventType.STATE_SNAPSHOT, snapshot: structuredClone(this.state) } as BaseEvent);
      return;
    }
    this.writeDelta(Object.entries(changes).map(([key, value]) => ({ op: 'add', path: `/${key}`, value })));
  }

  /** While the stream has not started, events only build up the state. */
  private quietly(): boolean {
    return !this.started;
  }

  private writeDelta(delta: { op: string; path: string; value: unknown }[]): void {
    this.write({ type: EventType.STATE_DELTA, delta } as BaseEvent);
  }

  /** A preview of a text: opens its message on the first piece. */
  private text(role: 'assistant' | 'reasoning', kind: string, key: string, delta: string): void {
    if (!delta) return;
    const open = this.openText(role, `${kind}:${key}`);
    open.written += delta;
    this.write({ type: role === 'reasoning' ? EventType.REASONING_MESSAGE_CONTENT : EventType.TEXT_MESSAGE_CONTENT, messageId: open.id, delta } as BaseEvent);
  }

  /** A text's full event: writes what its previews left out, then closes its message. */
  private fullText(role: 'assistant' | 'reasoning', kind: string, key: string, content: string): void {
    const streamKey = `${kind}:${key}`;
    const open = this.texts.get(streamKey);
    const rest = open && content.startsWith(open.written) ? content.slice(open.written.length) : open ? '' : content;
    if (!open && !content) return;
    if (rest) this.text(role, kind, key, rest);
    this.closeText(streamKey);
  }

  private openText(role: 'assistant' | 'reasoning', streamKey: string): { id: string; role: 'assistant' | 'reasoning'; written: string } {
    const existing = this.texts.get(streamKey);
    if (existing) return existing;
    const open = { id: this.nextId(role === 'reasoning' ? 'reasoning' : 'message'), role, written: '' };
    this.texts.set(streamKey, open);
    if (role === 'reasoning') {
      this.write({ type: EventType.REASONING_START, messageId: open.id } as BaseEvent);
      this.write({ type: EventType.REASONING_MESSAGE_START, messageId: open.id, role: 'reasoning' } as BaseEvent);
    } else {
      this.write({ type: EventType.TEXT_MESSAGE_START, messageId: open.id, role: 'assistant' } as BaseEvent);
    }
    return open;
  }

  private closeText(streamKey: string): void {
    const open = this.texts.get(streamKey);
    if (!open) return;
    this.texts.delete(streamKey);
    if (open.role === 'reasoning') {
      this.write({ type: EventType.REASONING_MESSAGE_END, messageId: open.id } as BaseEvent);
      this.write({ type: EventType.REASONING_END, messageId: open.id } as BaseEvent);
    } else {
      this.write({ type: EventType.TEXT_MESSAGE_END, messageId: open.id } as BaseEvent);
    }
  }

  private toolStart(toolCallId: string, name: string, args: Record<string, unknown>): void {
    this.write({ type: EventType.TOOL_CALL_START, toolCallId, toolCallName: name } as BaseEvent);
    this.write({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(args) } as BaseEvent);
    this.write({ type: EventType.TOOL_CALL_END, toolCallId } as BaseEvent);
  }

  private toolResult(toolCallId: string, result: unknown): void {
    const content = typeof result === 'string' ? result : JSON.stringify(result ?? null);
    this.write({ type: EventType.TOOL_CALL_RESULT, messageId: this.nextId('result'), toolCallId, content, role: 'tool' } as BaseEvent);
  }

  private openStep(name: string): string {
    if (this.steps.includes(name)) return name;
    this.steps.push(name);
    this.write({ type: EventType.STEP_STARTED, stepName: name } as BaseEvent);
    return name;
  }

  private closeStep(name: string): void {
    const position = this.steps.indexOf(name);
    if (position < 0) return;
    this.steps.splice(position, 1);
    this.write({ type: EventType.STEP_FINISHED, stepName: name } as BaseEvent);
  }

  private closeTurn(node: string): void {
    const turn = this.turns.get(node);
    if (turn === undefined) return;
    this.turns.delete(node);
    this.closeStep(turn);
  }

  private custom(name: string, event: ServerEvent): void {
    const { type: _type, ...value } = event as ServerEvent & { update_type?: string };
    delete value.update_type;
    this.write({ type: EventType.CUSTOM, name: `stepwise.${name}`, value } as BaseEvent);
  }

  private count(event: Extract<LoggedEvent, { update_type: 'agent_usage' }>): void {
    const entry = this.usage.get(event.model) ?? {
      model: event.model,
      inputTokens: 0,
      outputTokens: 0,
      totalTokens: 0,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    };
    entry.inputTokens! += event.prompt_tokens;
    entry.outputTokens! += event.completion_tokens;
    entry.totalTokens! += event.prompt_tokens + event.completion_tokens;
    entry.cachedInputTokens! += event.cached_tokens;
    entry.reasoningTokens! += event.reasoning_tokens;
    this.usage.set(event.model, entry);
  }

  /** Closes what is open (texts, steps), innermost first, so the stream ends well formed. */
  private closeAll(): void {
    for (const key of [...this.texts.keys()]) this.closeText(key);
    for (const name of [...this.steps].reverse()) this.closeStep(name);
    this.turns.clear();
  }

  private finish(outcome: { type: 'success' } | { type: 'cancelled' } | { type: 'interrupt'; interrupts: Interrupt[] }): void {
    if (this.ended) return;
    this.closeAll();
    this.ended = true;
    const result = outcome.type === 'interrupt' ? undefined : { run_id: this.runId, ending: this.state.ending, status: this.state.status };
    this.write({
      type: EventType.RUN_FINISHED,
      threadId: this.threadId,
      runId: this.aguiRunId,
      outcome,
      ...(result ? { result } : {}),
      ...(this.usage.size > 0 ? { usage: [...this.usage.values()] } : {}),
    } as BaseEvent);
  }

  private fail(message: string, code: string): void {
    if (this.ended) return;
    this.closeAll();
    this.ended = true;
    this.write({ type: EventType.RUN_ERROR, message, code, ...(this.usage.size > 0 ? { usage: [...this.usage.values()] } : {}) } as BaseEvent);
  }

  private nextId(kind: string): string {
    return `${this.aguiRunId}:${kind}:${++this.counter}`;
  }
}
