import { type FormEvent, useState } from 'react';
import { accessToken } from '../lib/auth.ts';

/** Asked once when the server has an access token set: the token is kept in this browser. */
export function TokenPrompt() {
  const [token, setToken] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!token.trim()) return;
    accessToken.set(token);
    window.location.reload();
  };
  return (
    <div className="token-page">
      <form className="token-form" onSubmit={submit}>
        <h1>
          <span className="logo" aria-hidden="true">
            ◆
          </span>{' '}
          Stepwise
        </h1>
        <p>
          This Stepwise is protected. Enter the access token you were given (the server's <code>AUTH_TOKEN</code>).
        </p>
        {accessToken.get() && <p className="notice">The saved token was not accepted.</p>}
        <input
          type="password"
          aria-label="Access token"
          autoComplete="current-password"
          value={token}
          onChange={(event) => setToken(event.target.value)}
          autoFocus
        />
        <button type="submit" className="primary" disabled={!token.trim()}>
          Continue
        </button>
      </form>
    </div>
  );
}
