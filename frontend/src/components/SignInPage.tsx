/** Nobody signed in: one way in, through the team's sign-in provider (oidc), or a word on the sign-in proxy (header). */
export function SignInPage({ loginUrl = '/auth/login', viaProxy = false }: { loginUrl?: string; viaProxy?: boolean }) {
  return (
    <div className="token-page">
      <div className="token-form">
        <h1>
          <span className="logo" aria-hidden="true">
            ◆
          </span>{' '}
          Stepwise
        </h1>
        {viaProxy ? (
          <p>This Stepwise is reached through your organisation’s sign-in. Open it at the address you were given, not directly.</p>
        ) : (
          <>
            <p>Sign in with your team’s account to see your chats and start new ones.</p>
            <a className="button primary sign-in" href={loginUrl}>
              Sign in
            </a>
          </>
        )}
      </div>
    </div>
  );
}
