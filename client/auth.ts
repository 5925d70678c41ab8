/**
 * How requests prove who sends them: nothing, a bearer token, or AWS IAM (SigV4, signed by the AWS
 * SDK's own signer, `@smithy/signature-v4`, which runs in Node, browsers and edge runtimes alike).
 * The signer and hash are loaded on first use, so a client without IAM never loads them, and the
 * Node-only default credential chain is loaded only in Node through a specifier bundlers do not follow.
 */
import { TributaryError } from './errors.js';

/** AWS credentials, as the AWS SDK names them. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/** Credentials, or a function that returns them (the AWS SDK's credential providers are such functions). */
export type AwsCredentialsProvider = AwsCredentials | (() => Promise<AwsCredentials>);

/** `auth` of {@link TributaryConfig}. */
export type AuthConfig =
  | { readonly type: 'none' }
  /** `Authorization: Bearer <token>`; a function is called before each request (refresh as you like). */
  | { readonly type: 'token'; readonly token: string | (() => string | Promise<string>) }
  | {
    readonly type: 'iam';
    /** The API's region, e.g. `us-east-1`. */
    readonly region: string;
    /** @default 'execute-api' (API Gateway) */
    readonly service?: string;
    /**
     * Credentials or a provider. @default in Node, the AWS SDK's default chain
     * (`@aws-sdk/credential-provider-node`, when installed); elsewhere required.
     */
    readonly credentials?: AwsCredentialsProvider;
  };

/** A request about to be sent, as auth sees it. */
export interface OutgoingRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Record<string, string>;
  /** The body as sent: JSON text, or gzipped bytes (signed as they are). */
  readonly body?: string | Uint8Array;
}

/** Turns a request into its signed headers. */
export type Authenticator = (req: OutgoingRequest) => Promise<Record<string, string>>;

// A variable, not a literal: bundlers leave `import(name)` alone, so browser bundles never see it.
const NODE_CHAIN = '@aws-sdk/credential-provider-node';

async function defaultCredentials(): Promise<() => Promise<AwsCredentials>> {
  const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
  if (!isNode) throw new TributaryError('auth.credentials is required outside Node (no default AWS credential chain in a browser or edge runtime).');
  try {
    const mod = (await import(/* @vite-ignore */ NODE_CHAIN)) as { defaultProvider: () => () => Promise<AwsCredentials> };
    return mod.defaultProvider();
  } catch (cause) {
    throw new TributaryError(`auth.credentials is required: ${NODE_CHAIN} (the AWS SDK's default credential chain) is not installed.`, { cause });
  }
}

/**
 * Signs `req` with SigV4 for `service` in `region` with the AWS SDK's signer (host, x-amz-date,
 * x-amz-security-token when the credentials carry a session token, authorization); `signingDate`
 * fixes the clock (tests).
 */
export async function signV4(req: OutgoingRequest, opts: { region: string; service: string; credentials: AwsCredentialsProvider; signingDate?: Date }): Promise<Record<string, string>> {
  const [{ SignatureV4 }, { Sha256 }] = await Promise.all([import('@smithy/signature-v4'), import('@aws-crypto/sha256-js')]);
  const signer = new SignatureV4({ service: opts.service, region: opts.region, credentials: opts.credentials, sha256: Sha256 });
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of req.url.searchParams) {
    const had = query[k];
    query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  const signed = await signer.sign({
    method: req.method,
    protocol: req.url.protocol,
    hostname: req.url.hostname,
    ...(req.url.port ? { port: Number(req.url.port) } : {}),
    path: req.url.pathname,
    query,
    headers: { ...req.headers, host: req.url.host },
    ...(req.body !== undefined ? { body: req.body } : {}),
  }, opts.signingDate ? { signingDate: opts.signingDate } : {});
  // fetch sets host itself (and refuses to be told).
  const { host: _host, ...headers } = signed.headers as Record<string, string>;
  return headers;
}

/** The authenticator for `auth`. */
export function authenticator(auth: AuthConfig | undefined): Authenticator {
  if (!auth || auth.type === 'none') return async (req) => req.headers;
  if (auth.type === 'token') {
    const { token } = auth;
    return async (req) => ({ ...req.headers, authorization: `Bearer ${typeof token === 'string' ? token : await token()}` });
  }
  if (auth.type === 'iam') {
    let provider: Promise<AwsCredentialsProvider> | undefined;
    const credentials = () => (provider ??= auth.credentials ? Promise.resolve(auth.credentials) : defaultCredentials());
    return async (req) => signV4(req, { region: auth.region, service: auth.service ?? 'execute-api', credentials: await credentials() });
  }
  throw new TributaryError(`Unknown auth type ${(auth as { type?: string }).type}; use none, token or iam.`);
}
