import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { SharedChatPage } from './components/SharedChatPage.tsx';
import './styles.css';

// A shared link (`/?shared=TOKEN`) shows that chat alone, read-only, with no sign-in and no socket.
const sharedToken = new URLSearchParams(window.location.search).get('shared');

createRoot(document.getElementById('root')!).render(<StrictMode>{sharedToken ? <SharedChatPage token={sharedToken} /> : <App />}</StrictMode>);
