import { Composer } from './components/Composer.tsx';
import { Conversation } from './components/Conversation.tsx';
import { Header } from './components/Header.tsx';
import { QuestionBanner } from './components/QuestionBanner.tsx';
import { useStepwise } from './lib/use-stepwise.ts';
import { pendingQuestion } from './state/reducer.ts';

/** The whole app: state comes from the reducer, components only render it and send messages. */
export function App() {
  const { state, actions } = useStepwise();
  const question = pendingQuestion(state);
  return (
    <div className="app">
      <Header session={state.session} connection={state.connection} />
      <Conversation state={state} />
      <div className="dock">
        {question && (
          <QuestionBanner key={`${question.runId}:${question.step}:${question.text}`} question={question.text} onAnswer={(answer) => actions.answer(question.runId, answer)} />
        )}
        {state.notice && (
          <div className="notice" role="alert">
            <span>{state.notice.message}</span>
            <button type="button" className="ghost" onClick={actions.dismissNotice} aria-label="Dismiss">
              ×
            </button>
          </div>
        )}
        <Composer
          busy={state.busy}
          stopping={state.stopping}
          connected={state.connection === 'live'}
          limits={state.session?.limits}
          tools={state.session?.tools ?? []}
          onSend={actions.chat}
          onStop={actions.stop}
        />
      </div>
    </div>
  );
}
