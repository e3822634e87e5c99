import { resolve } from '../openapi/response-validator.js';

/**
 * How an error of an operation must look (README, APIs; docs/operations.md). `page`: a page of
 * the person's side of the device flow, whose errors are our HTML pages (or the Edge envelope
 * where the request is refused before any page, e.g. 413).
 */
export type ErrorShape = 'edge' | 'oauth' | 'edge-or-oauth' | 'page';

/** One operation the suite attacks: from the served OpenAPI documents, or the hand list of /oidc. */
export interface Operation {
  /** `POST /edge/management/v1/identities/{id}` */
  key: string;
  method: string;
  /** Path template with `{name}` parameters, under its prefix. */
  path: string;
  /** The request body schema (JSON form) when the operation takes one. */
  bodySchema?: any;
  /** Media types the operation documents for its body. */
  media?: string[];
  /** The document the operation comes from (Edge APIs), to check responses against it. */
  doc?: any;
  /** Query parameters the operation reads. */
  queryNames: string[];
  errorShape: ErrorShape;
  /** A request that may write a business row: only bodies that can never be valid are sent. */
  writes: boolean;
  /** Leave the caller's own session alone (sending it would end the session the suite uses). */
  skipWithValidCredentials?: boolean;
  /** Where a body over 1 MiB must get 413 from an authorised caller. */
  takesBody: boolean;
}

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Operations a valid caller must not send: they end or change the caller's own state. */
const SELF_HARM = new Set([
  'DELETE /edge/client/v1/current-api-session',
  'POST /edge/management/v1/keys/rotate',
]);

/** Every operation an Edge document describes; new operations are covered without edits here. */
export function edgeOperations(doc: any): Operation[] {
  const base = doc.servers[0].url as string;
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(item).filter((k) => HTTP_METHODS.includes(k))) {
      const op = item[method];
      const content = op.requestBody?.content ?? {};
      const media = Object.keys(content);
      const schemaRef = content['application/json']?.schema ?? content[media[0] ?? '']?.schema;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) =>
        p.$ref ? resolve(doc, p.$ref) : p,
      );
      const key = `${method.toUpperCase()} ${base}${path}`;
      const upper = method.toUpperCase();
      ops.push({
        key,
        method: upper,
        path: `${base}${path}`,
        bodySchema: schemaRef?.$ref ? resolve(doc, schemaRef.$ref) : schemaRef,
        media,
        doc,
        queryNames: params.filter((p: any) => p.in === 'query').map((p: any) => p.name as string),
        errorShape: 'edge',
        writes: upper !== 'GET' && doc.servers[0].url === '/edge/management/v1',
        skipWithValidCredentials: SELF_HARM.has(key),
        takesBody: media.length > 0,
      });
    }
  }
  return ops;
}

const oidc = (
  method: string,
  path: string,
  o: Partial<Operation> & { errorShape: ErrorShape },
): Operation => ({
  key: `${method} ${path}`,
  method,
  path,
  queryNames: [],
  writes: false,
  takesBody: method !== 'GET',
  ...o,
});

const LOGIN_FIELDS = [
  'authRequestId',
  'id',
  'username',
  'password',
  'configTypes',
  'code',
  'passkey',
  'name',
];
const AUTHORIZE_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'method',
  'configTypes',
  'prompt',
  'max_age',
  'request',
  'response_mode',
];
const TOKEN_PARAMS = [
  'grant_type',
  'code',
  'redirect_uri',
  'client_id',
  'code_verifier',
  'refresh_token',
  'scope',
  'client_secret',
  'device_code',
];
/** The fields of the device flow's code form and its confirmation (src/routes/oidc-device-pages.ts). */
const DEVICE_FORM_FIELDS = ['xsrf', 'user_code', 'confirm', 'abort'];

/**
 * The /oidc endpoints by hand (no OpenAPI document describes them): the login steps of
 * src/routes/oidc-*.ts, and the OAuth endpoints. token, revoke, userinfo and token/introspection answer RFC 6749/6750
 * bodies; authorization may redirect or answer 400 with an RFC 6749 body (docs/operations.md).
 */
export function oidcOperations(): Operation[] {
  const login = (method: string, path: string) =>
    oidc(method, path, {
      errorShape: 'edge',
      queryNames: ['authRequestID', 'id'],
      bodySchema: objectOf(LOGIN_FIELDS),
    });
  return [
    ...['username', 'password', 'cert', 'ext-jwt', 'totp', 'totp/enroll'].flatMap((step) => [
      login('GET', `/oidc/login/${step}`),
      login('POST', `/oidc/login/${step}`),
    ]),
    login('DELETE', '/oidc/login/totp/enroll'),
    login('POST', '/oidc/login/totp/enroll/verify'),
    login('GET', '/oidc/login/auth-queries'),
    // The passkey steps (an extension): options (GET, JSON), assertion or registration (POST).
    ...['passkey', 'passkey/register'].flatMap((step) => [
      login('GET', `/oidc/login/${step}`),
      login('POST', `/oidc/login/${step}`),
    ]),
    // The login pages' passkey script: a static file, whatever the query says.
    oidc('GET', '/oidc/login/passkey.js', { errorShape: 'edge', queryNames: ['authRequestID'] }),
    oidc('GET', '/oidc/authorization', { errorShape: 'oauth', queryNames: AUTHORIZE_PARAMS }),
    // The provider's resume of an auth request; a uid it cannot route to is a JSON 404 in the Edge envelope.
    oidc('GET', '/oidc/authorization/{uid}', { errorShape: 'edge-or-oauth', queryNames: AUTHORIZE_PARAMS }),
    oidc('POST', '/oidc/token', { errorShape: 'oauth', bodySchema: objectOf(TOKEN_PARAMS) }),
    // The device authorization grant (RFC 8628): the device's request, and the person's pages.
    oidc('POST', '/oidc/device/auth', {
      errorShape: 'oauth',
      bodySchema: objectOf(['client_id', 'scope', 'configTypes']),
    }),
    oidc('GET', '/oidc/device', { errorShape: 'page', queryNames: ['user_code'] }),
    oidc('POST', '/oidc/device', { errorShape: 'page', bodySchema: objectOf(DEVICE_FORM_FIELDS) }),
    oidc('POST', '/oidc/revoke', {
      errorShape: 'oauth',
      bodySchema: objectOf(['token', 'token_type_hint', 'client_id']),
    }),
    oidc('GET', '/oidc/userinfo', { errorShape: 'oauth' }),
    oidc('POST', '/oidc/userinfo', { errorShape: 'oauth', bodySchema: objectOf(['access_token']) }),
    oidc('POST', '/oidc/token/introspection', {
      errorShape: 'oauth',
      bodySchema: objectOf(['token', 'token_type_hint']),
    }),
    // end_session errors have no fixed body: either envelope is accepted.
    oidc('GET', '/oidc/end_session', {
      errorShape: 'edge-or-oauth',
      queryNames: ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id'],
    }),
    oidc('POST', '/oidc/end_session', {
      errorShape: 'edge-or-oauth',
      bodySchema: objectOf(['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id']),
    }),
    // Not operations: the paths a client may guess (a JSON 404 in the Edge envelope).
    oidc('POST', '/edge/client/v1/enroll', { errorShape: 'edge', queryNames: ['method', 'token'] }),
    oidc('GET', '/oidc/{id}', { errorShape: 'edge' }),
    oidc('GET', '/edge/management/v1/{id}', { errorShape: 'edge' }),
  ];
}

function objectOf(names: string[]) {
  return { type: 'object', properties: Object.fromEntries(names.map((n) => [n, { type: 'string' }])) };
}
