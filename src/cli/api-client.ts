import { Agent, request as httpsRequest } from 'node:https';
import { CliError } from './cli-error.js';

export interface ApiClientOptions {
  /** `https://host:port` of the controller. */
  url: string;
  /** PEM bundle the server certificate must chain to: the CLI never talks to an unverified server. */
  ca: string;
  /** Legacy session token (header `svc-session`). */
  token?: string;
  /** OIDC access token (header `Authorization: Bearer`), e.g. of `svc login --device`. */
  accessToken?: string;
  /** Client certificate and key for mutual TLS (OTTCA enrollment). */
  cert?: string;
  key?: string;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
}

/** The Edge error envelope. */
interface ErrorEnvelope {
  error?: { code?: string; message?: string; cause?: { field?: string; reason?: string } };
}

/** Socket inactivity limit: a controller that stops answering must not hang the CLI. */
const TIMEOUT_MS = 60_000;
const TLS_TRUST_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The one line a failed API call is reported with: the envelope's message, code and field. */
export function describeApiError(status: number, text: string): string {
  let envelope: ErrorEnvelope = {};
  try {
    envelope = JSON.parse(text) as ErrorEnvelope;
  } catch {
    // not JSON: fall through to the status line
  }
  const error = envelope.error;
  if (!error?.code) return `the server answered HTTP ${status}`;
  const cause = error.cause?.field ? `, ${error.cause.field}: ${error.cause.reason ?? 'invalid'}` : '';
  return `${error.message ?? 'request failed'} (${error.code}${cause})`;
}

/** A refusal by the API: the one-line message, plus the envelope's code for callers that sort errors. */
export class ApiError extends CliError {
  override readonly name = 'ApiError';
  readonly code: string;
  /** The envelope's message alone (the one-line `message` adds the code and field). */
  readonly apiMessage: string;
  constructor(
    readonly status: number,
    text: string,
  ) {
    super(describeApiError(status, text));
    let error: NonNullable<ErrorEnvelope['error']> = {};
    try {
      error = (JSON.parse(text) as ErrorEnvelope).error ?? {};
    } catch {
      // not JSON: the status stands for the code
    }
    this.code = error.code ?? `HTTP_${status}`;
    const cause = error.cause?.field ? ` (${error.cause.field}: ${error.cause.reason ?? 'invalid'})` : '';
    this.apiMessage = `${error.message ?? `the server answered HTTP ${status}`}${cause}`;
  }
}

/** The server could not be reached (refused, reset, no answer in time): worth trying again later. */
export class UnreachableError extends CliError {
  override readonly name = 'UnreachableError';
}

/** Turns a network or TLS failure into one line naming the server and what went wrong. */
export function describeNetworkError(url: string, err: unknown): CliError {
  const { code = '', message = String(err) } = err as { code?: string; message?: string };
  if (TLS_TRUST_CODES.has(code)) {
    return new CliError(`cannot verify the certificate of ${url} with the stored CA: ${message}`);
  }
  return new UnreachableError(`cannot reach ${url}: ${message}`);
}

/**
 * A JSON client for the Edge APIs over verified HTTPS. Built on node:https (not undici, a dev
 * dependency here) so the CLI works in a production install such as the container image.
 */
export function createApiClient(options: ApiClientOptions) {
  const origin = new URL(options.url).origin;
  const agent = new Agent({ ca: options.ca, cert: options.cert, key: options.key, keepAlive: true });

  function send(
    method: string,
    path: string,
    o: RequestOptions & { form?: Record<string, string> },
    accept: string,
  ) {
    const url = new URL(path, origin);
    for (const [k, v] of Object.entries(o.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept };
    if (options.token) headers['svc-session'] = options.token;
    else if (options.accessToken) headers.authorization = `Bearer ${options.accessToken}`;
    let body: string | undefined;
    if (o.form !== undefined) {
      body = new URLSearchParams(o.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpsRequest(url, { method, agent, headers, timeout: TIMEOUT_MS }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', (err) => reject(describeNetworkError(origin, err)));
      });
      req.on('timeout', () => req.destroy(new Error('no answer in time')));
      req.on('error', (err) => reject(describeNetworkError(origin, err)));
      req.end(body);
    });
  }

  /** Sends a JSON request and returns the envelope's `data` (and `meta`); API errors throw. */
  async function request<T = unknown>(method: string, path: string, o: RequestOptions = {}) {
    const { status, text } = await send(method, path, o, 'application/json');
    if (status >= 400) throw new ApiError(status, text);
    let parsed: { data?: T; meta?: Record<string, unknown> };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new CliError(`the server answered HTTP ${status} with a body that is not JSON`);
    }
    return { data: parsed.data as T, meta: parsed.meta ?? {} };
  }

  /**
   * An OAuth 2 endpoint (`/oidc/…`): a form body, and the JSON answer as it is, error or not
   * (its errors are `{error, error_description}`, not the Edge envelope).
   */
  async function oauth(method: string, path: string, form?: Record<string, string>) {
    const { status, text } = await send(method, path, { form }, 'application/json');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new CliError(`${path} answered HTTP ${status} with a body that is not JSON`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw new CliError(`${path} answered HTTP ${status} with JSON that is not an object`);
    return { status, body };
  }

  return {
    origin,
    request,
    oauth,
    get: <T = unknown>(path: string, o?: RequestOptions) => request<T>('GET', path, o),
    post: <T = unknown>(path: string, o?: RequestOptions) => request<T>('POST', path, o),
    delete: <T = unknown>(path: string, o?: RequestOptions) => request<T>('DELETE', path, o),
    close: async () => agent.destroy(),
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;
