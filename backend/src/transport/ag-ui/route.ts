import type { ClientMessage, ErrorCode } from '@stepwise/shared-types';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ConnectionHandler } from '../../chat/connection-handler.ts';
import { SESSION_ID, type SessionManager } from '../../chat/session-manager.ts';
import type { Store } from '../../store/store.ts';
import type { CallerTraces } from '../../tracing/run-tracing.ts';
import { chatAccess, LOCAL_USER } from '../../auth/user.ts';
import { Binary, errorResponses, mediaResponse, SessionParams } from '../openapi.ts';
import { sendError } from '../rest-routes.ts';
import type { BackpressureLimits } from '../websocket-connection.ts';
import { AgUiConnection } from './connection.ts';
import { chatMessage, checkResumable, ForwardedProps, lastUserText, resumeMessages, statusOf, wantsProtobuf } from './input.ts';

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

/** What the AG-UI routes stand on. */
export interface AgUiDependencies {
  handler: ConnectionHandler;
  sessions: SessionManager;
  store: Store;
  limits: BackpressureLimits;
  callers: CallerTraces;
}

/**
 * `POST /api/ag-ui`: the AG-UI protocol over HTTP (server-sent events, or protobuf when asked for).
 * A RunAgentInput starts a run in its thread (a Stepwise session), or with `resume` answers the
 * questions that ended the previous AG-UI run; the response streams the run as AG-UI events until
 * it ends or asks something. Closing the stream does not stop the run (`POST
 * /api/sessions/:id/stop` does). docs/PROTOCOL.md, "AG-UI", has the whole mapping. Each POST is an
 * AgUiConnection handed to the connection handler, as the socket's connections are.
 */
export function registerAgUiRoutes(server: FastifyInstance, deps: AgUiDependencies): void {
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

      const encoder = new EventEncoder({ accept: wantsProtobuf(request.headers.accept) ? request.headers.accept : 'text/event-stream' });
      const connection = new AgUiConnection(reply.raw, encoder, deps.limits, {
        threadId: input.threadId,
        runId: input.runId,
        questionsAsText: request.query.interrupts === 'text',
      });
      const session = await deps.handler.openThread(connection, { sessionId: input.threadId, client: request.client, user: request.user });
      // Another user's thread is not found; an admin watches chats, never drives them.
      if (!session) return sendError(reply, 404, 'not_found', `No chat ${input.threadId}`);
      connection.onEnd = session.release;
      // However the request ends (a refusal, an error of the store, the stream's end), the chat is let go.
      reply.raw.on('close', () => connection.end());
      // Until the response starts, a refusal is the response (and the chat is let go).
      const refuse = (status: number, code: ErrorCode, message: string) => {
        connection.end();
        return sendError(reply, status, code, message);
      };
      const { chat } = session;
      // A user message while the run waits on a question answers the question asked first (for
      // clients that render no interrupts); otherwise it is a chat message that starts a run.
      const answering = content !== undefined && props.data.delivery === undefined ? chat.pendingQuestionIds[0] : undefined;
      if (resume.length === 0 && answering === undefined && props.data.delivery === undefined && chat.busy) {
        return refuse(
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
        const message = chatMessage(content!, props.data);
        if (!message.success) return refuse(400, 'bad_request', `The user message: ${message.error.issues[0]!.message}`);
        messages = [message.data];
      }
      // The stream shows what is logged from now on: of the run answered, or of the run that goes
      // when this is a message for it (forwardedProps.delivery), else of the run it starts.
      const quietUntil = chat.log.lastSeq;
      let afterSeq = quietUntil;
      let runId = resume.length === 0 && props.data.delivery !== undefined ? chat.activeRunId : undefined;
      if (resume.length > 0 || answering !== undefined) {
        const resumable = await checkResumable(chat, deps.store, answering !== undefined ? [{ interruptId: answering }] : resume);
        if ('error' in resumable) return refuse(resumable.status, resumable.error, resumable.message);
        // The run's events from its start rebuild the state the stream starts from.
        ({ runId, afterSeq } = resumable);
      }
      connection.follow(quietUntil, runId);
      await session.attach(afterSeq);
      // The client's trace (traceparent), if it sent one, is linked from the run it starts.
      if (messages[0]?.type === 'chat') deps.callers.acceptCaller(chat.sessionId, request.headers);
      for (const message of messages) {
        const refused = await session.handle(message);
        if (refused) return refuse(statusOf(refused.code as ErrorCode), refused.code as ErrorCode, refused.message);
      }
      reply.hijack();
      connection.open();
      // A dropped stream leaves the run going, as a dropped socket does. Closed already: let go of the chat now.
      if (reply.raw.destroyed) connection.end();
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
      const owner = SESSION_ID.test(request.params.id) ? await deps.sessions.ownerOf(request.params.id) : undefined;
      // Another user's chat is not found (an admin may stop any run).
      if (owner === undefined || chatAccess(request.user ?? LOCAL_USER, owner) === 'none') {
        return sendError(reply, 404, 'not_found', `No chat ${request.params.id.slice(0, 100)}`);
      }
      const done = await deps.handler.command(
        { sessionId: request.params.id, client: request.client, user: request.user },
        { type: 'agent_control', action: 'stop' },
      );
      if (!done) return sendError(reply, 404, 'not_found', `No chat ${request.params.id.slice(0, 100)}`);
      if (done.refused) return sendError(reply, 409, done.refused.code as ErrorCode, done.refused.message);
      return reply.code(202).send({ status: 'stopping' as const });
    },
  );
}
