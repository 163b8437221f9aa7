import { Composer } from './components/Composer.tsx';
import { FileList } from './components/FileList.tsx';
import { Conversation } from './components/Conversation.tsx';
import { Header } from './components/Header.tsx';
import { NotificationOffer } from './components/NotificationOffer.tsx';
import { QuestionBanner } from './components/QuestionBanner.tsx';
import { useRunNotifications } from './lib/run-notifications.ts';
import { SessionSidebar } from './components/SessionSidebar.tsx';
import { TokenPrompt } from './components/TokenPrompt.tsx';
import { SignInPage } from './components/SignInPage.tsx';
import { useNow } from './lib/use-now.ts';
import { useStepwise } from './lib/use-stepwise.ts';
import { SessionFilesContext } from './lib/session-files-context.ts';
import { lazy, Suspense, useEffect, useState } from 'react';

// The dialogs load when first opened.
const SettingsDialog = lazy(() => import('./components/SettingsDialog.tsx').then((module) => ({ default: module.SettingsDialog })));
const ShareDialog = lazy(() => import('./components/ShareDialog.tsx').then((module) => ({ default: module.ShareDialog })));
const SnapshotsDialog = lazy(() => import('./components/SnapshotsDialog.tsx').then((module) => ({ default: module.SnapshotsDialog })));
import { pendingApprovals, pendingQuestion } from './state/reducer.ts';
import { ApprovalContext, type Approve } from './lib/approval-context.ts';
import { SteeringContext, type SteeringApi } from './lib/steering-context.ts';
import { RunActionsContext, runActionsOf } from './lib/run-actions-context.ts';

/** The whole app: state comes from the reducer, components only render it and send messages. */
export function App() {
  const { state, actions, access, me } = useStepwise();
  const question = pendingQuestion(state);
  const approvals = pendingApprovals(state);
  useRunNotifications(state);
  const approve: Approve = (questionId, decision) => {
    const pending = approvals.find((each) => each.questionId === questionId);
    return pending ? actions.approve(pending.runId, questionId, decision) : false;
  };
  // Approvals waiting are counted in the tab's title, as a question flashes it.
  useEffect(() => {
    if (approvals.length === 0) return;
    const original = document.title;
    document.title = `(${approvals.length}) Approval needed · ${original.replace(/^\(\d+\) Approval needed · /, '')}`;
    return () => {
      document.title = original;
    };
  }, [approvals.length]);
  const steering: SteeringApi = {
    pending: state.pending,
    activeRunId: state.activeRunId,
    readOnly: state.session?.read_only === true,
    cancel: actions.cancelMessage,
    messageBranch: (nodeId, content) => actions.messageBranch(nodeId, content, state.activeRunId),
    stopBranch: actions.stopBranch,
    resumeBranch: actions.resumeBranch,
  };
  // What strategy panels read and do beyond their run: the todo list, and under the latest run once nothing runs, edits and going on.
  const runActions = runActionsOf(state, {
    saveTodos: (todos) => void actions.saveTodos(todos),
    goOn: (strategy, strategyOptions) =>
      void actions.chat('Go on', { agentMode: true, maxSteps: state.session?.limits.max_steps_default ?? 10, strategy, strategyOptions }),
    saveText: (name, text) => actions.saveText(name, text),
  });
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [dragging, setDragging] = useState(false);
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [snapshotsOpen, setSnapshotsOpen] = useState(false);
  const [shareOpen, setShareOpen] = useState(false);
  const now = useNow();
  // Escape stops the run in progress, as the Stop button does (not while a dialog has the keyboard).
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented || !state.busy || state.stopping) return;
      if (document.querySelector('dialog[open], [role="dialog"]')) return;
      // Escape in a field being edited (an approval's arguments, a reason, a rename) leaves the field alone, not the run.
      const target = event.target as HTMLElement | null;
      const editing = target?.closest('input, textarea, select, [contenteditable="true"]');
      if (editing && editing.getAttribute('aria-label') !== 'Message') return;
      event.preventDefault();
      actions.stop();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [state.busy, state.stopping, actions]);
  // The list refreshes when a response completes (a new title, a new last activity).
  const refreshKey = state.busy ? -1 : state.lastSeq;
  if (access === 'token_required') return <TokenPrompt />;
  if (access === 'sign_in_required') return <SignInPage />;
  if (access === 'proxy_required') return <SignInPage viaProxy />;
  const watching = state.session?.read_only === true ? (state.session.owner?.name ?? 'another person') : undefined;
  return (
    <SessionFilesContext.Provider value={actions}>
      <ApprovalContext.Provider value={approve}>
        <SteeringContext.Provider value={steering}>
          <RunActionsContext.Provider value={runActions}>
            <div className="layout">
              <SessionSidebar
                currentId={state.session?.session_id}
                refreshKey={refreshKey}
                open={sidebarOpen}
                onClose={() => setSidebarOpen(false)}
                admin={me?.user.admin === true}
                userId={me?.user.id}
              />
              <div
                className={`app${dragging ? ' dragging' : ''}`}
                onDragOver={(event) => {
                  if (!event.dataTransfer.types.includes('Files')) return;
                  event.preventDefault();
                  setDragging(true);
                }}
                onDragLeave={(event) => {
                  if (event.currentTarget === event.target || !event.currentTarget.contains(event.relatedTarget as Node)) setDragging(false);
                }}
                onDrop={(event) => {
                  if (!event.dataTransfer.types.includes('Files')) return;
                  event.preventDefault();
                  setDragging(false);
                  void actions.attach([...event.dataTransfer.files]);
                }}
              >
                {dragging && (
                  <div className="drop-hint" aria-hidden="true">
                    Drop files to attach them to this chat
                  </div>
                )}
                <Header
                  session={state.session}
                  connection={state.connection}
                  now={now}
                  onToggleSidebar={() => setSidebarOpen((open) => !open)}
                  onOpenSettings={() => setSettingsOpen(true)}
                  {...(watching === undefined ? { onOpenSnapshots: () => setSnapshotsOpen(true) } : {})}
                  onOpenShare={state.session && state.items.length > 0 ? () => setShareOpen(true) : undefined}
                  approvalsWaiting={approvals.length}
                  me={me}
                />
                <Suspense fallback={null}>
                  {shareOpen && state.session && (
                    <ShareDialog sessionId={state.session.session_id} canShare={watching === undefined} now={now} onClose={() => setShareOpen(false)} />
                  )}
                  {settingsOpen && (
                    <SettingsDialog session={state.session} now={now} onClose={() => setSettingsOpen(false)} settingsAdmin={me?.settings_admin === true} />
                  )}
                  {snapshotsOpen && state.session && (
                    <SnapshotsDialog
                      sessionId={state.session.session_id}
                      busy={state.busy}
                      refreshKey={state.lastSeq}
                      now={now}
                      onSave={(label) => void actions.saveSnapshot(label)}
                      onRollback={(id) => void actions.rollback(id)}
                      onResume={(id) => {
                        actions.resumeSnapshot(id);
                        setSnapshotsOpen(false);
                      }}
                      onClose={() => setSnapshotsOpen(false)}
                    />
                  )}
                </Suspense>
                <Conversation
                  state={state}
                  now={now}
                  onContinue={(runId, extra, maxCostUsd) => void actions.resume(runId, extra, maxCostUsd)}
                  onRewind={(runId, step, extraSteps) => void actions.resumeSnapshot(`step:${runId}:${step}`, extraSteps)}
                  // Offered when the agent first waits on the person: then it is plain why.
                  footer={(question || approvals.length > 0) && watching === undefined ? <NotificationOffer /> : undefined}
                />
                <div className="dock">
                  {question && (
                    <QuestionBanner
                      key={`${question.runId}:${question.step}:${question.text}:${question.questionId ?? ''}`}
                      question={question.text}
                      deadline={question.deadline}
                      parked={state.runs[question.runId]?.parked !== undefined}
                      now={now}
                      {...(question.choices
                        ? { choices: question.choices, onChoose: (choice: string) => void actions.answer(question.runId, choice, question.questionId) }
                        : {})}
                    />
                  )}
                  {state.notice && (
                    <div
                      className={`notice${state.notice.tone === 'success' ? ' notice-success' : ''}`}
                      role={state.notice.tone === 'success' ? 'status' : 'alert'}
                    >
                      <span>{state.notice.message}</span>
                      <button type="button" className="ghost" onClick={actions.dismissNotice} aria-label="Dismiss">
                        ×
                      </button>
                    </div>
                  )}
                  <FileList files={state.files} uploading={state.uploading} onDownload={actions.download} />
                  {watching !== undefined ? (
                    <div className="watch-bar" role="status" data-testid="watching">
                      <span>
                        You are watching <strong>{watching}</strong>’s chat as an admin: you can read it and stop its run.
                      </span>
                      {state.busy && (
                        <button type="button" className="danger" onClick={actions.stop} disabled={state.stopping}>
                          Stop
                        </button>
                      )}
                    </div>
                  ) : (
                    <Composer
                      busy={state.busy}
                      parked={state.activeRunId !== undefined && state.runs[state.activeRunId]?.parked !== undefined}
                      stopping={state.stopping}
                      connected={state.connection === 'live'}
                      limits={state.session?.limits}
                      tools={state.session?.tools ?? []}
                      mcpServers={state.session?.mcp_servers ?? []}
                      strategies={state.session?.strategy_catalog ?? []}
                      lastRun={state.session?.last_run ? { sessionId: state.session.session_id, ...state.session.last_run } : undefined}
                      question={question?.text}
                      started={state.items.length > 0}
                      onAttach={(files) => void actions.attach(files)}
                      attached={state.attached}
                      onDetach={actions.detach}
                      onSend={actions.chat}
                      onAnswer={(answer) => (question ? actions.answer(question.runId, answer, question.questionId) : false)}
                      runActive={state.activeRunId !== undefined}
                      onSteer={(content, delivery, options) => actions.steer(content, delivery, options, state.activeRunId)}
                      onStop={actions.stop}
                    />
                  )}
                </div>
              </div>
            </div>
          </RunActionsContext.Provider>
        </SteeringContext.Provider>
      </ApprovalContext.Provider>
    </SessionFilesContext.Provider>
  );
}
