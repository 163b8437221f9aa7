import { AgentRequestInput, ApprovalDecision, type ErrorCode, type ErrorEvent } from '@stepwise/shared-types';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { User } from '../auth/user.ts';
import type { HistoryService } from '../chat/history-service.ts';
import { openQuestion } from '../chat/open-questions.ts';
import type { SessionManager } from '../chat/session-manager.ts';
import type { Store } from '../store/store.ts';
import { errorResponses, SessionParams } from './openapi.ts';
import { sendError, viewer } from './rest-routes.ts';

const QuestionParams = SessionParams.extend({ question_id: z.string().min(1).max(200).describe('The question’s id (agent_request_input’s question_id)') });
const Answer = z
  .object({
    content: z.string().max(100_000).optional().describe('The answer’s words (a question; "Approve" or "Deny" also answer an approval)'),
    approval: ApprovalDecision.optional().describe('The answer to an approval: approve (with edited arguments) or deny (with a reason)'),
  })
  .refine((answer) => answer.content !== undefined || answer.approval !== undefined, { message: 'needs "content" or "approval"', path: ['content'] });

/** Nothing to answer: the question is not the person's chat's, or is no longer open (answered, timed out, its run ended). */
const NOT_OPEN = 'No such question is open in this chat: it was answered, its run ended, or it is not yours';

/**
 * One question of a chat, read and answered without the chat (what the answer page uses): 404 for
 * a question that is not the person's, or no longer open. An answer to a parked run resumes it.
 */
export function registerQuestionRoutes(server: FastifyInstance, deps: { history: HistoryService; sessions: SessionManager; store: Store }): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  const tags = ['questions'];
  app.get(
    '/api/sessions/:id/questions/:question_id',
    {
      schema: {
        tags,
        summary: 'A question (or an approval) a chat’s run waits on: 404 when it is not open',
        params: QuestionParams,
        response: { 200: z.object({ question: AgentRequestInput }), ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      const question = await findOpen(deps, request.params.id, request.params.question_id, viewer(request));
      return question ? { question } : sendError(reply, 404, 'not_found', NOT_OPEN);
    },
  );
  app.post(
    '/api/sessions/:id/questions/:question_id/answer',
    {
      schema: {
        tags,
        summary: 'Answers a question (or an approval) of a chat’s run; a parked run goes on from where it stood',
        params: QuestionParams,
        body: Answer,
        response: { 200: z.object({ answered: z.literal(true) }), ...errorResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const { id, question_id: questionId } = request.params;
      const user = viewer(request);
      if (!(await findOpen(deps, id, questionId, user))) return sendError(reply, 404, 'not_found', NOT_OPEN);
      const opened = await deps.sessions.open(id, { keepId: true, user });
      if (!opened) return sendError(reply, 404, 'not_found', NOT_OPEN);
      try {
        const { content, approval } = request.body;
        const refused = await opened.chat.handle(
          { type: 'agent_user_input', question_id: questionId, ...(content === undefined ? {} : { content }), ...(approval ? { approval } : {}) },
          { client: request.client, user },
        );
        return refused ? refusal(reply, refused) : { answered: true as const };
      } finally {
        deps.sessions.release(opened.chat);
      }
    },
  );
}

/** Whether the person may see `sessionId`'s question `questionId` and it is open (see openQuestion): the question, or undefined. */
export async function findOpen(
  deps: { history: HistoryService; sessions: SessionManager; store: Store },
  sessionId: string,
  questionId: string,
  user: User,
): Promise<AgentRequestInput | undefined> {
  try {
    await deps.history.requireSession(sessionId, user, 'write');
  } catch {
    // Another person's chat is as unknown as a chat that does not exist.
    return undefined;
  }
  return openQuestion(deps.store, sessionId, questionId, deps.sessions.liveRun(sessionId));
}

function refusal(reply: FastifyReply, error: ErrorEvent): FastifyReply {
  const status = error.code === 'no_pending_input' ? 404 : error.code === 'run_active' ? 409 : 400;
  return sendError(reply, status, error.code as ErrorCode, error.message);
}

/** The answer page's status: 404 when the signed-in person's question named by the link is not open (the page says so too). */
export async function answerPageStatus(
  deps: { history: HistoryService; sessions: SessionManager; store: Store },
  request: FastifyRequest<{ Params: { question_id: string }; Querystring: { session?: string } }>,
): Promise<200 | 404> {
  const sessionId = request.query.session;
  // Not signed in yet: the page asks for the sign-in first, and then for the question over the socket.
  if (!request.user || !sessionId) return 200;
  return (await findOpen(deps, sessionId, request.params.question_id, request.user)) ? 200 : 404;
}
