/**
 * Signing in: a bearer token (the local stack's `--auth`: credentials.json or `tributary users
 * add`), or an OIDC login with the provider the API's JWT authorizer trusts (authorization code with
 * PKCE, by oidc-client-ts, loaded only here). An IAM-only API cannot be called from a browser
 * without AWS credentials: the page says to deploy with the construct's jwtAuthorizer.
 */
import { useState } from 'preact/hooks';
import { cluster, describeError, resetCluster, session, type ConsoleConfig } from '../common/api.js';
import { Field } from '../common/components.js';

type Oidc = NonNullable<ConsoleConfig['oidc']>;

async function userManager(o: Oidc) {
  const { UserManager, WebStorageStateStore } = await import('oidc-client-ts');
  const redirect = location.href.replace(/[?#].*$/, '');
  return new UserManager({
    authority: o.issuer, client_id: o.clientId, redirect_uri: redirect, response_type: 'code',
    scope: [...new Set(['openid', ...(o.scopes ?? [])])].join(' '), userStore: new WebStorageStateStore({ store: sessionStorage }),
  });
}

/** Back from the provider (`?code=...&state=...`): keep the token, tidy the URL. */
export async function completeOidcLogin(o: Oidc): Promise<void> {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') || !q.has('state')) return;
  const user = await (await userManager(o)).signinRedirectCallback();
  // API Gateway's JWT authorizer takes the ID token's or the access token's claims; the audience it
  // checks is the client id, which is the ID token's audience.
  session.token = user.id_token ?? user.access_token;
  // Back to the page the sign-in started from (the provider returns to /ui/ without its hash).
  const returnTo = typeof user.state === 'string' && user.state.startsWith('#/') ? user.state : location.hash;
  history.replaceState(null, '', location.pathname + returnTo);
}

export function SignIn({ config, onSignedIn }: { config: ConsoleConfig; onSignedIn: () => void }) {
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const tryToken = async (token: string) => {
    setBusy(true);
    setError(undefined);
    session.token = token;
    resetCluster();
    try {
      await cluster().admin.describeController();
      onSignedIn();
    } catch (e) {
      session.token = null;
      resetCluster();
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1>Sign in to Tributary</h1>
      {config.auth === 'iam' && (
        <p class="error" role="alert">
          This API uses AWS IAM authorization, which a browser cannot sign without AWS credentials.
          Deploy the cluster with the construct's <code>jwtAuthorizer</code> option to use the console
          (the README's "Console" section), or paste a token its authorizer accepts below.
        </p>
      )}
      {config.auth === 'jwt' && config.oidc && (
        <p>
          <button type="button" onClick={async () => (await userManager(config.oidc as Oidc)).signinRedirect({ state: location.hash })}>Sign in with your identity provider</button>
        </p>
      )}
      <form aria-label="Sign in with a token" onSubmit={(e) => {
        e.preventDefault();
        const token = String(new FormData(e.currentTarget).get('token') ?? '').trim();
        if (token) void tryToken(token);
      }}>
        <Field label="Token" hint={config.auth === 'token' ? 'The local stack with --auth: a token from <data-dir>/credentials.json or `tributary users add`.' : 'A bearer token the API accepts.'}>
          <input name="token" type="password" autoComplete="current-password" required />
        </Field>
        <button type="submit" disabled={busy}>Sign in</button>
        {error && <p role="alert" class="error">{error}</p>}
      </form>
    </main>
  );
}
