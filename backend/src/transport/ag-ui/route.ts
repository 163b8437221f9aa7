import { ChatMessage, type ClientMessage, type ErrorCode, type ServerEvent } from '@stepwise/shared-types';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ClientConnection } from '../../chat/client-connection.ts';
import { SESSION_ID, type SessionManager } from '../../chat/session-manager.ts';
import type { Store } from '../../store/store.ts';
import type { CallerTraces } from '../../tracing/run-tracing.ts';
import { chatAccess, LOCAL_USER } from '../../auth/user.ts';
import { Binary, errorResponses, mediaResponse, SessionParams } from '../openapi.ts';
import { sendError } from '../rest-routes.ts';
import type { BackpressureLimits } from '../websocket-connection.ts';
import { checkResumable, lastUserText, resumeMessages, statusOf, wantsProtobuf } from './input.ts';
import { AgUiStream } from './stream.ts';
import { AgUiTranslator } from './translate.ts';

/**
 * AG-UI's input schema and event encoder (with its protobuf encoding), loaded at the first AG-UI
 * request rather than at every start: a server no AG-UI client talks to never pays for them.
 */
async function loadAgUi() {
  const [schemas, encoder] = await Promise.all([import('@ag-ui/core/schemas'), import('@ag-ui/encoder')]);
  return { RunAgentInputSchema: schemas.RunAgentInputSchema, EventEncoder: encoder.EventEncoder };
}
let loadingAgUi: ReturnType<typeof loadAgUi> | undefined;
const agUiPackages = () =>
  (loadingAgUi ??= loadAgUi().catch((error: unknown) => {
    loadingAgUi = undefined; // the next request tries again
    throw error;
  }));

/** What `forwardedProps` may carry: the run's settings, as a `chat` message names them. */
const ForwardedProps = z
  .object({
    strategy: z.string().min(1).max(64).optional(),
    strategy_options: z.record(z.string(), z.unknown()).optional(),
    max_steps: z.number().int().min(1).optional(),
    tools: z.array(z.string().min(1).max(200)).max(200).optional(),
    /** While the thread's run goes: `steer` (read at its next boundary), `queue` (runs after it) or `interrupt`; without, such a POST is 409. */
    delivery: z.enum(['steer', 'queue', 'interrupt']).optional(),
    /** With `steer` or `interrupt`: the branch it is for (a research task). */
    node_id: z.string().min(1).max(200).optional(),
  })
  .loose();

/** The body as the API description shows it (the whole of it is checked against AG-UI's own schema). */
const RunAgentInputBody = z
  .object({
    threadId: z.string().describe('The Stepwise session (a UUID); created when new'),
    runId: z.string().describe('This AG-UI run'),
    messages: z.array(z.object({ id: z.string(), role: z.string() }).loose()).describe('The conversation; its last user message is the chat message'),
    forwardedProps: ForwardedProps.optional().describe('strategy, strategy_options, max_steps, tools; delivery and node_id for a message to a run that goes'),
    resume: z
      .array(z.object({ interruptId: z.string(), status: z.enum(['resolved', 'cancelled']), payload: z.unknown().optional() }))
      .optional()
      .describe('Answers to the interrupts that ended the previous AG-UI run'),
  })
  .loose();

/**
 * `POST /api/ag-ui`: the AG-UI protocol over HTTP (server-sent events, or protobuf when asked for).
 * A RunAgentInput starts a run in its thread (a Stepwise session), or with `resume` answers the
 * questions that ended the previous AG-UI run; the response streams the run as AG-UI events until
 * it ends or asks something. Closing the stream does not stop the run (`POST
 * /api/sessions/:id/stop` does). docs/PROTOCOL.md, "AG-UI", has the whole mapping.
 */
export function registerAgUiRoutes(server: FastifyInstance, sessions: SessionManager, store: Store, limits: BackpressureLimits, callers: CallerTraces): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/api/ag-ui',
    {
      schema: {
        tags: ['ag-ui'],
        summary: 'Runs the agent for an AG-UI client (RunAgentInput in, AG-UI events out as text/event-stream)',
        body: RunAgentInputBody,
        querystring: z.object({
          interrupts: z
            .enum(['text'])
            .optional()
            .describe('text: questions only as assistant text, the AG-UI run ending success (for clients that keep interrupts but cannot show them)'),
        }),
        response: {
          200: mediaResponse('AG-UI events: server-sent events, or AG-UI protobuf when the Accept header asks for it', {
            'text/event-stream': z.string(),
            'application/vnd.ag-ui.event+proto': Binary,
          }),
          ...errorResponses(400, 401, 409, 410, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const { RunAgentInputSchema, EventEncoder } = await agUiPackages();
      const parsed = RunAgentInputSchema.safeParse(request.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return sendError(reply, 400, 'bad_request', `RunAgentInput.${issue.path.join('.') || 'body'}: ${issue.message}`);
      }
      const input = parsed.data;
      if (!SESSION_ID.test(input.threadId)) return sendError(reply, 400, 'invalid_id', 'threadId must be a Stepwise session id (a version 4 UUID)');
      const props = ForwardedProps.safeParse(input.forwardedProps ?? {});
      if (!props.success) {
        const issue = props.error.issues[0]!;
        return sendError(reply, 400, 'bad_request', `forwardedProps.${issue.path.join('.')}: ${issue.message}`);
      }
      const resume = input.resume ?? [];
      const content = resume.length > 0 ? undefined : lastUserText(input.messages);
      if (resume.length === 0 && !content) return sendError(reply, 400, 'bad_request', 'RunAgentInput.messages has no user message with text to answer');

      const opened = await sessions.open(input.threadId, { keepId: true, user: request.user });
      // Another user's thread is not found; an admin watches chats, never drives them.
      if (opened?.access !== 'own') {
        if (opened) sessions.release(opened.chat);
        return sendError(reply, 404, 'not_found', `No chat ${input.threadId}`);
      }
      const { chat } = opened;
      // A user message while the run waits on a question answers the question asked first (for
      // clients that render no interrupts); otherwise it is a chat message that starts a run.
      const answering = content !== undefined && props.data.delivery === undefined ? chat.pendingQuestionIds[0] : undefined;
      // A message for the run that goes (forwardedProps.delivery): the stream follows that run from here.
      const steering = resume.length === 0 && answering === undefined && props.data.delivery !== undefined ? chat.activeRunId : undefined;
      if (resume.length === 0 && answering === undefined && props.data.delivery === undefined && chat.busy) {
        sessions.release(chat);
        return sendError(
          reply,
          409,
          'run_active',
          'A run goes in this thread: send forwardedProps.delivery (steer, queue or interrupt) to message it, or wait for it to end',
        );
      }
      let messages: ClientMessage[];
      // An approval reads "approve" or "deny …" (tools/approval.ts); any other text is the answer as it is.
      if (resume.length > 0) messages = resumeMessages(resume);
      else if (answering !== undefined) messages = [{ type: 'agent_user_input', question_id: answering, content: content! }];
      else {
        const message = ChatMessage.safeParse({
          type: 'chat',
          content,
          agent_mode: true,
          ...(props.data.strategy ? { strategy: props.data.strategy } : {}),
          ...(props.data.strategy_options ? { strategy_options: props.data.strategy_options } : {}),
          ...(props.data.max_steps ? { agent_max_steps: props.data.max_steps } : {}),
          ...(props.data.tools ? { tools: props.data.tools } : {}),
          ...(props.data.delivery ? { delivery: props.data.delivery } : {}),
          ...(props.data.node_id ? { node_id: props.data.node_id } : {}),
        });
        if (!message.success) {
          sessions.release(chat);
          return sendError(reply, 400, 'bad_request', `The user message: ${message.error.issues[0]!.message}`);
        }
        messages = [message.data];
      }
      const stream = new AgUiStream(
        reply.raw,
        new EventEncoder({ accept: wantsProtobuf(request.headers.accept) ? request.headers.accept : 'text/event-stream' }),
        limits,
      );
      const translator = new AgUiTranslator(input.threadId, input.runId, (event) => stream.write(event), request.query.interrupts === 'text');
      let afterSeq = chat.log.lastSeq;
      const quietUntil = afterSeq;
      if (resume.length > 0 || answering !== undefined) {
        const refused = await checkResumable(chat, store, answering !== undefined ? [{ interruptId: answering }] : resume);
        if ('error' in refused) {
          sessions.release(chat);
          return sendError(reply, refused.status, refused.error, refused.message);
        }
        translator.runId = refused.runId;
        afterSeq = refused.afterSeq;
      } else if (steering !== undefined) translator.runId = steering;
      const connection = new AgUiConnection(stream, translator, quietUntil);
      const finish = () => {
        if (connection.finished) return;
        connection.finished = true;
        chat.log.detach(connection);
        stream.end();
        sessions.release(chat);
      };
      connection.onDone = finish;
      await chat.log.attach(connection, afterSeq);
      // The client's trace (traceparent), if it sent one, is linked from the run it starts.
      if (messages[0]?.type === 'chat') callers.acceptCaller(chat.sessionId, request.headers);
      for (const message of messages) {
        const refusedMessage = await chat.handle(message, { client: request.client, user: request.user });
        if (refusedMessage) {
          // Nothing was streamed yet: the refusal is the response.
          connection.finished = true;
          chat.log.detach(connection);
          sessions.release(chat);
          const code = refusedMessage.code as ErrorCode;
          return sendError(reply, statusOf(code), code, refusedMessage.message);
        }
      }
      reply.hijack();
      stream.open();
      translator.start();
      connection.settle();
      reply.raw.on('close', () => {
        // A dropped stream leaves the run going, as a dropped socket does.
        if (!connection.finished) finish();
      });
      // Closed already (before the listener was there): let go of the session now.
      if (reply.raw.destroyed && !connection.finished) finish();
    },
  );

  app.post(
    '/api/sessions/:id/stop',
    {
      schema: {
        tags: ['ag-ui'],
        summary: 'Stops the chat’s active run (it ends with agent_stopped; an AG-UI stream on it with RUN_FINISHED, outcome cancelled)',
        params: SessionParams,
        response: { 202: z.object({ status: z.literal('stopping') }), ...errorResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const owner = SESSION_ID.test(request.params.id) ? await sessions.ownerOf(request.params.id) : undefined;
      // Another user's chat is not found (an admin may stop any run).
      if (owner === undefined || chatAccess(request.user ?? LOCAL_USER, owner) === 'none') {
        return sendError(reply, 404, 'not_found', `No chat ${request.params.id.slice(0, 100)}`);
      }
      const opened = await sessions.open(request.params.id, { user: request.user });
      if (!opened?.resumed) {
        if (opened) sessions.release(opened.chat);
        return sendError(reply, 404, 'not_found', `No chat ${request.params.id.slice(0, 100)}`);
      }
      const { chat } = opened;
      const refused = await chat.handle({ type: 'agent_control', action: 'stop' }, { client: request.client, user: request.user });
      sessions.release(chat);
      if (refused) return sendError(reply, 409, refused.code as ErrorCode, refused.message);
      return reply.code(202).send({ status: 'stopping' as const });
    },
  );
}

/** The session's events for one AG-UI stream: earlier ones build up state, later ones are translated. */
class AgUiConnection implements ClientConnection {
  finished = false;
  onDone: () => void = () => undefined;
  private settling = false;

  constructor(
    private readonly stream: AgUiStream,
    private readonly translator: AgUiTranslator,
    private readonly quietUntil: number,
  ) {}

  get congested(): boolean {
    return this.stream.congested;
  }

  get closed(): boolean {
    return this.finished || this.stream.closed;
  }

  send(event: ServerEvent): void {
    if (this.finished) return;
    if ('seq' in event && typeof event.seq === 'number' && event.seq <= this.quietUntil) {
      this.translator.absorb(event);
      return;
    }
    this.translator.take(event);
    this.settle();
  }

  /** Ends the stream once the run ended, or, a turn after a question came, with an interrupt for every one that came with it. */
  settle(): void {
    if (this.translator.done) return this.onDone();
    if (!this.translator.waiting || this.settling) return;
    this.settling = true;
    setImmediate(() => {
      this.settling = false;
      if (this.translator.interruptIfWaiting()) this.onDone();
    });
  }

  whenDrained(signal?: AbortSignal): Promise<void> {
    return this.stream.whenDrained(signal);
  }

  close(_code: number, reason: string): void {
    this.translator.abort(reason, 'closed');
    this.onDone();
  }
}
