import { lazy, StrictMode, Suspense } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import './styles.css';

// A shared link (`/?shared=TOKEN`) shows that chat alone, read-only, with no sign-in and no socket; its page loads only then.
const SharedChatPage = lazy(() => import('./components/SharedChatPage.tsx').then((module) => ({ default: module.SharedChatPage })));
const sharedToken = new URLSearchParams(window.location.search).get('shared');
// A notification's link (`/answer/QUESTION_ID?session=ID`) shows that one question, to answer from anywhere.
const AnswerPage = lazy(() => import('./components/AnswerPage.tsx').then((module) => ({ default: module.AnswerPage })));
const answering = /^\/answer\/([^/]+)$/.exec(window.location.pathname)?.[1];

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    {sharedToken ? (
      <Suspense fallback={null}>
        <SharedChatPage token={sharedToken} />
      </Suspense>
    ) : answering ? (
      <Suspense fallback={null}>
        <AnswerPage questionId={decodeURIComponent(answering)} />
      </Suspense>
    ) : (
      <App />
    )}
  </StrictMode>,
);
