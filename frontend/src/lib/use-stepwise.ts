import type { ApprovalDecision, ClientMessage, Delivery, TodosSetMessage } from '@stepwise/shared-types';
import { useCallback, useEffect, useMemo, useReducer, useRef, useState } from 'react';
import { reduce } from '../state/reducer.ts';
import { initialViewState } from '../state/view-state.ts';
import { api, sessionInUrl } from './api.ts';
import { AuthRequiredError, SignInRequiredError, socketProtocols } from './auth.ts';
import type { Me } from '@stepwise/shared-types';
import { StepwiseSocket } from './socket-client.ts';

/** Uploads the web app has going at once (well under the server's MAX_UPLOADS_PER_CLIENT default of 16). */
const UPLOADS_AT_ONCE = 4;

/** What a message sends besides its text. `strategy` only when the server offers a choice of them. */
export interface SendOptions {
  agentMode: boolean;
  maxSteps: number;
  /** Absent: the server's default tools. */
  tools?: string[];
  strategy?: string;
  /** The options that differ from the strategy's defaults. */
  strategyOptions?: Record<string, unknown>;
  /** Session files attached to this message (its images are shown to the model). */
  attachments?: string[];
}

/** A chat message with what it sends besides its text (plain chat sends its text and attachments only). */
function chatMessage(content: string, options: SendOptions): Extract<ClientMessage, { type: 'chat' }> {
  const attachments = options.attachments?.length ? { attachments: options.attachments } : {};
  return options.agentMode
    ? {
        type: 'chat',
        content,
        agent_mode: true,
        agent_max_steps: options.maxSteps,
        ...(options.tools ? { tools: options.tools } : {}),
        ...(options.strategy ? { strategy: options.strategy } : {}),
        ...(options.strategyOptions ? { strategy_options: options.strategyOptions } : {}),
        ...attachments,
      }
    : { type: 'chat', content, ...attachments };
}

/** The socket URL of the server that served this page. */
export function defaultSocketUrl(): string {
  const { protocol, host } = window.location;
  return `${protocol === 'https:' ? 'wss' : 'ws'}://${host}/ws`;
}

/** Connects the reducer to the socket: a thin layer, all logic lives in those two. */
export function useStepwise(url: string = defaultSocketUrl()) {
  const [state, dispatch] = useReducer(reduce, initialViewState);
  const socketRef = useRef<StepwiseSocket | null>(null);
  const sessionIdRef = useRef<string | undefined>(undefined);
  const [access, setAccess] = useState<'checking' | 'granted' | 'token_required' | 'sign_in_required' | 'proxy_required'>('checking');
  const [me, setMe] = useState<Me | undefined>();

  useEffect(() => {
    let cancelled = false;
    api.me().then(
      (found) => {
        if (cancelled) return;
        setMe(found);
        setAccess('granted');
      },
      (error: unknown) => {
        if (cancelled) return;
        if (error instanceof SignInRequiredError) setAccess(error.loginUrl ? 'sign_in_required' : 'proxy_required');
        else setAccess(error instanceof AuthRequiredError ? 'token_required' : 'granted');
      },
    );
    return () => {
      cancelled = true;
    };
  }, []);

  useEffect(() => {
    if (access !== 'granted') return;
    const requested = sessionInUrl.read();
    const socket = new StepwiseSocket({ url, protocols: socketProtocols, ...(requested ? { sessionId: requested } : {}) });
    socketRef.current = socket;
    if (requested) {
      // The log replays the runs; the user's own messages come from the history API.
      api
        .session(requested)
        .then((detail) => detail && dispatch({ kind: 'history_loaded', sessionId: requested, messages: detail.messages }))
        .catch(() => undefined);
    }
    const offEvent = socket.onEvent((event) => {
      if (event.type === 'session' && 'session_id' in event && typeof event.session_id === 'string') {
        sessionInUrl.write(event.session_id);
        sessionIdRef.current = event.session_id;
      }
      if (event.type === 'session_deleted') {
        // Deleted in another tab (or through the API): this chat is gone, so start a new one.
        socket.close();
        window.location.assign('/');
        return;
      }
      dispatch({ kind: 'server_event', event });
    });
    const offState = socket.onState((connection) => dispatch({ kind: 'connection', state: connection }));
    socket.connect();
    return () => {
      offEvent();
      offState();
      socket.close();
    };
  }, [url, access]);

  const send = useCallback((message: ClientMessage): boolean => socketRef.current?.send(message) ?? false, []);

  const actions = useMemo(
    () => ({
      chat(content: string, options: SendOptions): boolean {
        const message = chatMessage(content, options);
        if (!send(message)) return false;
        dispatch({ kind: 'user_message', id: crypto.randomUUID(), content, ...(message.attachments ? { attachments: message.attachments } : {}) });
        return true;
      },
      /**
       * A message while the chat's run works (or its answer streams): it steers that run, waits to
       * start the next one (`queue`), or cuts the model call in flight (`interrupt`). It carries the
       * run's options too, which a queued message's run starts with.
       */
      steer(content: string, delivery: Delivery, options: SendOptions, runId?: string): boolean {
        if (!send({ ...chatMessage(content, options), delivery })) return false;
        dispatch({ kind: 'message_sent', id: crypto.randomUUID(), content, delivery, ...(runId && delivery !== 'queue' ? { runId } : {}) });
        return true;
      },
      /** A message for one branch of the running run (a research task): it reaches that branch's next model call. */
      messageBranch(nodeId: string, content: string, runId?: string): boolean {
        if (!send({ type: 'chat', content, delivery: 'steer', node_id: nodeId })) return false;
        dispatch({ kind: 'message_sent', id: crypto.randomUUID(), content, delivery: 'steer', nodeId, ...(runId ? { runId } : {}) });
        return true;
      },
      /** Withdraws a message that waits for its run (message_cancelled follows). */
      cancelMessage(messageId: string): boolean {
        if (!send({ type: 'cancel_message', message_id: messageId })) return false;
        dispatch({ kind: 'cancel_requested', messageId });
        return true;
      },
      /** Stops one branch of the running run (a research task); the rest goes on. */
      stopBranch(nodeId: string): boolean {
        return send({ type: 'agent_control', action: 'stop', node_id: nodeId });
      },
      /** Runs a stopped branch again while its run goes on. */
      resumeBranch(nodeId: string): boolean {
        return send({ type: 'agent_control', action: 'resume', node_id: nodeId });
      },
      stop(): void {
        if (send({ type: 'agent_control', action: 'stop' })) dispatch({ kind: 'stop_requested' });
      },
      /** Keeps a snapshot of the conversation as it is now. */
      saveSnapshot(label: string): boolean {
        return send({ type: 'snapshot_save', ...(label ? { label } : {}) });
      },
      /** Makes a snapshot (or a step's end) the working state again. */
      rollback(snapshotId: string): boolean {
        return send({ type: 'snapshot_rollback', snapshot_id: snapshotId });
      },
      /** Rolls back to a snapshot (or a step's end) and resumes its run from there. */
      resumeSnapshot(snapshotId: string, extraSteps?: number): boolean {
        if (!send({ type: 'snapshot_resume', snapshot_id: snapshotId, ...(extraSteps ? { extra_steps: extraSteps } : {}) })) return false;
        dispatch({ kind: 'resume_requested' });
        return true;
      },
      /** Replaces the session's todo list (between runs): every tab gets it back as agent_todos. */
      saveTodos(todos: TodosSetMessage['todos']): boolean {
        return send({ type: 'todos_set', todos });
      },
      /** Continues a run that stopped, failed or reached its step limit, for `extraSteps` more steps. */
      resume(runId: string, extraSteps: number, maxCostUsd?: number): boolean {
        if (
          !send({
            type: 'agent_control',
            action: 'resume',
            run_id: runId,
            extra_steps: extraSteps,
            ...(maxCostUsd === undefined ? {} : { max_cost_usd: maxCostUsd }),
          })
        )
          return false;
        dispatch({ kind: 'resume_requested' });
        return true;
      },
      answer(runId: string, content: string, questionId?: string): boolean {
        if (!send({ type: 'agent_user_input', content, ...(questionId ? { question_id: questionId } : {}) })) return false;
        dispatch({ kind: 'answer_sent', runId, answer: content, ...(questionId ? { questionId } : {}) });
        return true;
      },
      /** A person's decision on a tool call that waits for approval (edited arguments, a reason, "always in this run"). */
      approve(runId: string, questionId: string, approval: ApprovalDecision): boolean {
        if (!send({ type: 'agent_user_input', question_id: questionId, approval })) return false;
        dispatch({ kind: 'approval_sent', runId, questionId });
        return true;
      },
      dismissNotice(): void {
        dispatch({ kind: 'dismiss_notice' });
      },
      /**
       * Uploads files into the session, a few at a time (the server takes MAX_UPLOADS_PER_CLIENT at
       * once from one client); each appears once the server announces it (file_saved).
       */
      async attach(files: File[]): Promise<void> {
        const sessionId = sessionIdRef.current;
        if (!sessionId) return;
        for (const file of files) dispatch({ kind: 'upload_started', name: file.name });
        const waiting = [...files];
        const uploadNext = async (): Promise<void> => {
          for (let file = waiting.shift(); file; file = waiting.shift()) {
            try {
              await api.uploadFile(sessionId, file);
              dispatch({ kind: 'upload_finished', name: file.name });
            } catch (error) {
              dispatch({ kind: 'upload_finished', name: file.name, error: (error as Error).message });
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(UPLOADS_AT_ONCE, files.length) }, uploadNext));
      },
      /** Takes a file off the next message (it stays in the chat's files). */
      detach(name: string): void {
        dispatch({ kind: 'detach', name });
      },
      /** Saves a text file into the session (the research document from its editor); rejects with the server's reason. */
      async saveText(name: string, text: string): Promise<void> {
        const sessionId = sessionIdRef.current;
        if (!sessionId) throw new Error('No session yet');
        await api.uploadFile(sessionId, new File([text], name, { type: 'text/plain' }));
      },
      fetchBlob(name: string): Promise<Blob> {
        const sessionId = sessionIdRef.current;
        return sessionId ? api.fileBlob(sessionId, name) : Promise.reject(new Error('No session yet'));
      },
      download(name: string): void {
        const sessionId = sessionIdRef.current;
        if (!sessionId) return;
        api.downloadFile(sessionId, name).catch((error: unknown) => dispatch({ kind: 'notice', code: 'download_failed', message: (error as Error).message }));
      },
    }),
    [send],
  );

  return { state, actions, access, me };
}
