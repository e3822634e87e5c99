/** A WWW-Authenticate challenge (RFC 6750 plus the `id`/`issuer` fields of spec 7.1). */
export interface Challenge {
  scheme: 'Bearer' | 'svc-session';
  realm: 'svc-oidc' | 'svc-session' | 'svc-primary-ext-jwt' | 'svc-secondary-ext-jwt';
  error: 'missing' | 'invalid' | 'expired';
  description: string;
  id?: string;
  issuer?: string;
}

const quote = (v: string) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** Formats one challenge as one header value, parameters comma-separated (decisions.md §6). */
export function formatChallenge(c: Challenge): string {
  const params: [string, string | undefined][] = [
    ['realm', c.realm],
    ['error', c.error],
    ['error_description', c.description],
    ['id', c.id],
    ['issuer', c.issuer],
  ];
  const body = params
    .filter((p): p is [string, string] => p[1] !== undefined)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(', ');
  return `${c.scheme} ${body}`;
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
