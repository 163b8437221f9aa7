import { useEffect, useId, useState } from 'react';
import { useStepwise } from '../lib/use-stepwise.ts';
import { pendingApprovals, pendingQuestion } from '../state/reducer.ts';
import type { ViewState } from '../state/view-state.ts';
import { SignInPage } from './SignInPage.tsx';
import { TokenPrompt } from './TokenPrompt.tsx';

/** Where the page stands: the chat's log still loading, the question open, or nothing to answer. */
type Found =
  | { kind: 'loading' }
  | { kind: 'question'; runId: string; text: string; choices?: string[]; deadline?: string }
  | { kind: 'approval'; runId: string; tool: string; arguments: Record<string, unknown>; deadline?: string }
  | { kind: 'closed' };

function find(state: ViewState, questionId: string): Found {
  const loaded = state.session !== undefined && state.lastSeq >= (state.session.last_seq ?? 0);
  const question = pendingQuestion(state);
  if (question?.questionId === questionId) {
    return {
      kind: 'question',
      runId: question.runId,
      text: question.text,
      ...(question.choices ? { choices: question.choices } : {}),
      ...(question.deadline ? { deadline: question.deadline } : {}),
    };
  }
  const approval = pendingApprovals(state).find((each) => each.questionId === questionId);
  if (approval) {
    return {
      kind: 'approval',
      runId: approval.runId,
      tool: approval.tool,
      arguments: approval.arguments,
      ...(approval.deadline ? { deadline: approval.deadline } : {}),
    };
  }
  return loaded ? { kind: 'closed' } : { kind: 'loading' };
}

/**
 * One question or one approval, answered without the chat (`/answer/QUESTION_ID?session=ID`, the
 * link a notification carries): made for a phone. It needs the same sign-in as the app, and what is
 * not the person's, or no longer open, shows as nothing to answer.
 */
export function AnswerPage({ questionId }: { questionId: string }) {
  const { state, actions, access } = useStepwise();
  const [answered, setAnswered] = useState<string | undefined>();
  const [text, setText] = useState('');
  const [reason, setReason] = useState('');
  const headingId = useId();
  const found = find(state, questionId);
  const chatLink = state.session ? `/?session=${encodeURIComponent(state.session.session_id)}` : '/';
  useEffect(() => {
    document.title = found.kind === 'approval' ? 'Approval needed · Stepwise' : found.kind === 'question' ? 'The agent asks you · Stepwise' : 'Stepwise';
  }, [found.kind]);

  if (access === 'token_required') return <TokenPrompt />;
  if (access === 'sign_in_required') return <SignInPage />;
  if (access === 'proxy_required') return <SignInPage viaProxy />;
  const send = (what: string, sent: boolean) => {
    if (sent) setAnswered(what);
  };
  return (
    <main className="answer-page" aria-labelledby={headingId}>
      <p className="answer-brand">◆ Stepwise</p>
      {answered ? (
        <section role="status">
          <h1 id={headingId}>{answered}</h1>
          <p>
            The run goes on. <a href={chatLink}>Open the chat</a> to follow it.
          </p>
        </section>
      ) : found.kind === 'loading' ? (
        <p id={headingId} role="status">
          Loading the question…
        </p>
      ) : found.kind === 'closed' ? (
        <section>
          <h1 id={headingId}>Nothing to answer here</h1>
          <p>This question is no longer open: it was answered, its run ended, or it is not yours.</p>
          <p>
            <a href={chatLink}>Open the chat</a>
          </p>
        </section>
      ) : found.kind === 'question' ? (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            if (text.trim()) send('Answer sent', actions.answer(found.runId, text.trim(), questionId));
          }}
        >
          <h1 id={headingId}>The agent asks you</h1>
          <p className="answer-question">{found.text}</p>
          {found.deadline && <Deadline deadline={found.deadline} />}
          {found.choices && (
            <div className="answer-actions">
              {found.choices.map((choice) => (
                <button key={choice} type="button" onClick={() => send('Answer sent', actions.answer(found.runId, choice, questionId))}>
                  {choice}
                </button>
              ))}
            </div>
          )}
          <label className="answer-field">
            Your answer
            <textarea value={text} onChange={(event) => setText(event.target.value)} rows={3} />
          </label>
          <button type="submit" className="primary" disabled={!text.trim()}>
            Send
          </button>
        </form>
      ) : (
        <form onSubmit={(event) => event.preventDefault()}>
          <h1 id={headingId}>Approve this call?</h1>
          <p className="answer-question">
            The agent wants to run <strong>{found.tool}</strong> with:
          </p>
          <pre className="answer-arguments" aria-label="Arguments">
            {JSON.stringify(found.arguments, null, 2)}
          </pre>
          {found.deadline && <Deadline deadline={found.deadline} />}
          <label className="answer-field">
            Reason for denying (optional)
            <input value={reason} onChange={(event) => setReason(event.target.value)} />
          </label>
          <div className="answer-actions">
            <button type="button" className="primary" onClick={() => send('Approved', actions.approve(found.runId, questionId, { decision: 'approve' }))}>
              Approve
            </button>
            <button
              type="button"
              className="danger"
              onClick={() =>
                send('Denied', actions.approve(found.runId, questionId, { decision: 'deny', ...(reason.trim() ? { reason: reason.trim() } : {}) }))
              }
            >
              Deny
            </button>
          </div>
        </form>
      )}
    </main>
  );
}

/** A question's deadline, or (past it: the run is parked) that the run waits for this answer. */
function Deadline({ deadline }: { deadline: string }) {
  return (
    <p className="answer-deadline">
      {Date.parse(deadline) > Date.now()
        ? `Answer by ${new Date(deadline).toLocaleString()}`
        : 'Nobody answered in time: the run is parked and goes on when you answer'}
    </p>
  );
}
