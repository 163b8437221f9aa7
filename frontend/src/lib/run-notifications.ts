import { useEffect, useRef } from 'react';
import { pendingApprovals, pendingQuestion } from '../state/reducer.ts';
import type { ViewState } from '../state/view-state.ts';
import { subscribeToPush } from './web-push.ts';

/** What a person is told about while the tab is in the background. */
export interface Attention {
  key: string;
  title: string;
  body: string;
  /** What a click on the notification brings into view: the question or the approval, or the run's end. */
  target: string;
}

/**
 * What in this chat calls for the person now: the question the run waits on, each approval, and
 * each run that ended (finished or failed). Keyed, so that each is told once.
 */
export function attentionItems(state: ViewState): Attention[] {
  const items: Attention[] = [];
  const question = pendingQuestion(state);
  if (question?.questionId) {
    items.push({ key: `q:${question.questionId}`, title: 'The agent asks you', body: question.text, target: '.question-banner' });
  }
  for (const approval of pendingApprovals(state)) {
    items.push({
      key: `a:${approval.questionId}`,
      title: 'Approval needed',
      body: `The agent wants to run ${approval.tool}; it waits for your answer.`,
      target: `[data-testid="approval"][data-question-id="${approval.questionId}"]`,
    });
  }
  for (const run of Object.values(state.runs)) {
    if (!run.end || run.replayed) continue;
    const failed = run.end.kind === 'failed';
    if (!failed && run.end.kind !== 'answered' && run.end.kind !== 'unresolved' && run.end.kind !== 'max_steps') continue;
    items.push({
      key: `e:${run.id}`,
      title: failed ? 'The run failed' : run.end.kind === 'answered' ? 'The run finished' : 'The run ended without an answer',
      body: run.end.kind === 'failed' ? run.end.message : 'Open the chat to read how it ended.',
      target: '.conversation',
    });
  }
  return items;
}

/** Whether this browser can show system notifications, and has been allowed to. */
export function notificationsAllowed(): boolean {
  return typeof Notification !== 'undefined' && Notification.permission === 'granted';
}

/**
 * Shows a system notification for each new thing that calls for the person while the tab is
 * hidden (what appears while they look is theirs already); a click brings the tab forward at it.
 * What the page found when it opened (a log replayed) is not told again.
 */
export function useRunNotifications(state: ViewState): void {
  const told = useRef<Set<string> | undefined>(undefined);
  // Allowed before: keep this browser's push subscription current (a new key, a subscription the browser renewed).
  useEffect(() => {
    if (notificationsAllowed()) void subscribeToPush().catch(() => undefined);
  }, []);
  const items = attentionItems(state);
  const keys = items.map((item) => item.key).join('\n');
  // biome-ignore lint/correctness/useExhaustiveDependencies: the keys stand for the items
  useEffect(() => {
    if (state.connection !== 'live') return;
    if (!told.current) {
      told.current = new Set(items.map((item) => item.key));
      return;
    }
    for (const item of items) {
      if (told.current.has(item.key)) continue;
      told.current.add(item.key);
      if (document.hidden && notificationsAllowed()) show(item);
    }
  }, [keys, state.connection]);
}

function show(item: Attention): void {
  const notification = new Notification(item.title, { body: item.body, tag: item.key });
  notification.onclick = () => {
    window.focus();
    notification.close();
    const target = document.querySelector<HTMLElement>(item.target);
    target?.scrollIntoView({ block: 'center' });
    (target?.querySelector<HTMLElement>('button, textarea, input') ?? target)?.focus();
  };
}
