/** A WWW-Authenticate challenge (RFC 6750 §3 plus our `id`/`issuer` fields naming an external JWT signer). */
export interface Challenge {
  scheme: 'Bearer' | 'svc-session';
  realm: 'svc-oidc' | 'svc-session' | 'svc-primary-ext-jwt' | 'svc-secondary-ext-jwt';
  error: 'missing' | 'invalid' | 'expired';
  description: string;
  id?: string;
  issuer?: string;
}

const quote = (v: string) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

function format(scheme: string, params: [string, string | undefined][]): string {
  const body = params
    .filter((p): p is [string, string] => p[1] !== undefined)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(', ');
  return `${scheme} ${body}`;
}

/** Formats one challenge as one header value, parameters comma-separated. */
export function formatChallenge(c: Challenge): string {
  return format(c.scheme, [
    ['realm', c.realm],
    ['error', c.error],
    ['error_description', c.description],
    ['id', c.id],
    ['issuer', c.issuer],
  ]);
}

/** The error of an OAuth protected resource (RFC 6750 §3.1); none when no token was sent. */
export interface OAuthBearerError {
  error?: 'invalid_token' | 'insufficient_scope';
  description?: string;
}

/**
 * An Edge `svc-oidc` bearer challenge as OAuth clients expect it at an OAuth protected resource
 * such as userinfo (OIDC Core §5.3.3, RFC 6750 §3.1): any refused token is `invalid_token`, and a
 * request without a token gets no error code or other error information. Undefined for the
 * other challenges (legacy sessions, external JWTs), which keep their Edge form.
 */
export function oauthBearerErrorOf(c: Challenge): OAuthBearerError | undefined {
  if (c.scheme !== 'Bearer' || c.realm !== 'svc-oidc') return undefined;
  return c.error === 'missing' ? {} : { error: 'invalid_token', description: c.description };
}

/** The RFC 6750 §3 challenge for `e`, in realm `svc-oidc`. */
export function formatOAuthBearerChallenge(e: OAuthBearerError): string {
  return format('Bearer', [
    ['realm', 'svc-oidc'],
    ['error', e.error],
    ['error_description', e.description],
  ]);
}

export const challenges = {
  missing: (): Challenge[] => [
    {
      scheme: 'svc-session',
      realm: 'svc-session',
      error: 'missing',
      description: 'no matching token was provided',
    },
    { scheme: 'Bearer', realm: 'svc-oidc', error: 'missing', description: 'no matching token was provided' },
  ],
  bearerExpired: (): Challenge => ({
    scheme: 'Bearer',
    realm: 'svc-oidc',
    error: 'expired',
    description: 'token expired',
  }),
  bearerInvalid: (): Challenge => ({
    scheme: 'Bearer',
    realm: 'svc-oidc',
    error: 'invalid',
    description: 'token is invalid',
  }),
  sessionExpired: (): Challenge => ({
    scheme: 'svc-session',
    realm: 'svc-session',
    error: 'expired',
    description: 'session expired',
  }),
  sessionInvalid: (): Challenge => ({
    scheme: 'svc-session',
    realm: 'svc-session',
    error: 'invalid',
    description: 'session is invalid',
  }),
};
