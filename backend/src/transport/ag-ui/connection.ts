import type { ServerResponse } from 'node:http';
import type { EventEncoder } from '@ag-ui/encoder';
import type { ServerEvent } from '@stepwise/shared-types';
import type { ClientConnection } from '../../chat/client-connection.ts';
import type { BackpressureLimits } from '../websocket-connection.ts';
import { AgUiStream } from './stream.ts';
import { AgUiTranslator } from './translate.ts';

/** Which AG-UI run a response streams, and how it shows questions. */
export interface AgUiRun {
  threadId: string;
  /** RunAgentInput.runId. */
  runId: string;
  /** Questions only as text (`?interrupts=text`): the AG-UI run then ends a success. */
  questionsAsText: boolean;
}

/**
 * The ClientConnection port on an AG-UI response (one POST, one AG-UI run): the chat's events,
 * translated to AG-UI events (translate.ts) and written as server-sent events or protobuf
 * (stream.ts). Events logged up to where the stream starts only rebuild the state its run's
 * STATE_SNAPSHOT starts from. Nothing is written before `open`: until then a refusal may still be
 * the response. The stream ends itself once its run ends, or, a turn after a question came, with
 * an interrupt for every question that came with it; then `onEnd` lets go of the chat.
 */
export class AgUiConnection implements ClientConnection {
  /** Called once, when the stream ends (its run ended or asked, the client went, or the server closed it). */
  onEnd: () => void = () => undefined;
  private readonly stream: AgUiStream;
  private readonly translator: AgUiTranslator;
  /** The last seq that only builds up state. */
  private quietUntil = 0;
  private ended = false;
  private settling = false;

  constructor(raw: ServerResponse, encoder: EventEncoder, limits: BackpressureLimits, run: AgUiRun) {
    this.stream = new AgUiStream(raw, encoder, limits);
    this.translator = new AgUiTranslator(run.threadId, run.runId, (event) => this.stream.write(event), run.questionsAsText);
  }

  /**
   * The stream shows the events logged after seq `after` (those up to it only build up state): of
   * run `runId` when it is known (a run answered or steered), else of the next run that starts.
   */
  follow(after: number, runId: string | undefined): void {
    this.quietUntil = after;
    if (runId !== undefined) this.translator.runId = runId;
  }

  get congested(): boolean {
    return this.stream.congested;
  }

  get closed(): boolean {
    return this.ended || this.stream.closed;
  }

  send(event: ServerEvent): void {
    if (this.ended) return;
    if ('seq' in event && typeof event.seq === 'number' && event.seq <= this.quietUntil) {
      this.translator.absorb(event);
      return;
    }
    this.translator.take(event);
    this.settle();
  }

  /** Starts the response (the request was accepted): RUN_STARTED, then what waited. */
  open(): void {
    this.stream.open();
    this.translator.start();
    this.settle();
  }

  whenDrained(signal?: AbortSignal): Promise<void> {
    return this.stream.whenDrained(signal);
  }

  close(_code: number, reason: string): void {
    this.translator.abort(reason, 'closed');
    this.end();
  }

  /** Ends the stream after what was written (the run goes on) and lets go of the chat; once. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stream.end();
    this.onEnd();
  }

  /** Ends the stream once the run ended, or, a turn after a question came, with an interrupt for every one that came with it. */
  private settle(): void {
    if (this.translator.done) return this.end();
    if (!this.translator.waiting || this.settling) return;
    this.settling = true;
    setImmediate(() => {
      this.settling = false;
      if (this.translator.interruptIfWaiting()) this.end();
    });
  }
}
