/** AUTH_MODE oidc and nobody signed in: one way in, through the team's sign-in provider. */
export function SignInPage({ loginUrl = '/auth/login' }: { loginUrl?: string }) {
  return (
    <div className="token-page">
      <div className="token-form">
        <h1>
          <span className="logo" aria-hidden="true">◆</span> Stepwise
        </h1>
        <p>Sign in with your team’s account to see your chats and start new ones.</p>
        <a className="button primary sign-in" href={loginUrl}>
          Sign in
        </a>
      </div>
    </div>
  );
}
