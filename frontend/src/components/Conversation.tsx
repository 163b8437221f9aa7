import { useEffect, useRef } from 'react';
import type { ViewState } from '../state/view-state.ts';
import { Markdown } from './Markdown.tsx';
import { RunTimeline } from './RunTimeline.tsx';

/** The conversation: user turns, agent runs, assistant answers. */
export function Conversation({ state }: { state: ViewState }) {
  const endRef = useRef<HTMLDivElement>(null);
  const last = state.items.at(-1);
  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: 'end' });
  }, [state.items.length, last, state.streamingAnswer, state.lastSeq]);

  return (
    <main className="conversation" aria-live="polite">
      {state.items.length === 0 && (
        <div className="empty">
          <h2>Watch the agent think, act and observe.</h2>
          <p>Switch on Agent mode, set the max iterations, and ask something. Try “What is (17+25)*3?”.</p>
        </div>
      )}
      {state.items.map((item) => {
        switch (item.kind) {
          case 'user':
            return (
              <div key={item.id} className="turn turn-user" data-testid="user-turn">
                <div className="bubble">{item.content}</div>
              </div>
            );
          case 'assistant':
            return (
              <div key={item.id} className="turn turn-assistant" data-testid="assistant-turn">
                <Markdown text={item.content} className="bubble" />
              </div>
            );
          case 'run': {
            const run = state.runs[item.runId];
            return run ? <RunTimeline key={item.id} run={run} /> : null;
          }
          default: {
            const unexpected: never = item;
            return unexpected;
          }
        }
      })}
      {state.streamingAnswer !== undefined && (
        <div className="turn turn-assistant streaming" data-testid="assistant-streaming">
          <Markdown text={state.streamingAnswer} className="bubble" />
        </div>
      )}
      <div ref={endRef} />
    </main>
  );
}
