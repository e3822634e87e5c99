import { Agent, buildConnector, type Dispatcher } from 'undici';

export interface TestResponse<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The value of a header; repeated headers joined with ", ". */
  header(name: string): string | undefined;
  /** Every value of a header (e.g. one WWW-Authenticate per challenge). */
  headerAll(name: string): string[];
  body: T;
  text: string;
}

export interface ClientOptions {
  ca: string;
  cert?: string;
  key?: string;
  /** The local address to connect from, e.g. another loopback address than 127.0.0.1. */
  localAddress?: string;
  /** Opens the TLS connections itself (e.g. after writing a PROXY protocol header). */
  connector?: buildConnector.connector;
  /**
   * Connect to this port instead of the URL's, keeping the URL's Host: one instance of several
   * behind a shared address, as a TCP proxy would route it.
   */
  connectPort?: number;
}

export interface RequestOptions {
  /** Arrays send the header once per value (repeated Authorization headers). */
  headers?: Record<string, string | string[]>;
  /** An object is sent as JSON unless a content-type says otherwise; a string is sent as is. */
  body?: unknown;
  form?: Record<string, string | string[]>;
}

function encodeBody(o: RequestOptions, headers: Record<string, string | string[]>): string | undefined {
  const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (o.form) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(o.form)) for (const value of [v].flat()) params.append(k, value);
    if (!has('content-type')) headers['content-type'] = 'application/x-www-form-urlencoded';
    return params.toString();
  }
  if (typeof o.body === 'string') return o.body;
  if (o.body === undefined) return undefined;
  if (!has('content-type')) headers['content-type'] = 'application/json';
  return JSON.stringify(o.body);
}

/** A real HTTPS client that trusts the service CA, keeps no cookies and follows no redirects. */
export function createHttpsClient(baseUrl: string, options: ClientOptions) {
  const tls = { ca: options.ca, cert: options.cert, key: options.key };
  const connector = options.connectPort ? buildConnector(tls) : undefined;
  const dispatcher: Dispatcher = new Agent({
    connect:
      options.connector ??
      (connector
        ? (opts, callback) => connector({ ...opts, port: String(options.connectPort) }, callback)
        : tls),
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    keepAliveTimeout: 1000,
  });

  async function request<T = any>(
    method: string,
    path: string,
    o: RequestOptions = {},
  ): Promise<TestResponse<T>> {
    const headers: Record<string, string | string[]> = { ...o.headers };
    const body = encodeBody(o, headers);
    const raw: string[] = [];
    for (const [k, v] of Object.entries(headers)) for (const value of [v].flat()) raw.push(k, value);
    const url = new URL(/^https?:/.test(path) ? path : baseUrl + path);
    const res = await dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: method as Dispatcher.HttpMethod,
      headers: raw,
      body,
    });
    const text = await res.body.text();
    const get = (name: string) => res.headers[name.toLowerCase()];
    const contentType = String(get('content-type') ?? '');
    return {
      status: res.statusCode,
      headers: res.headers,
      header: (name) => {
        const v = get(name);
        return Array.isArray(v) ? v.join(', ') : v;
      },
      headerAll: (name) => [get(name) ?? []].flat(),
      body: (contentType.includes('json') && text ? JSON.parse(text) : text) as T,
      text,
    };
  }

  return {
    baseUrl,
    dispatcher,
    request,
    get: <T = any>(path: string, o?: RequestOptions) => request<T>('GET', path, o),
    post: <T = any>(path: string, o?: RequestOptions) => request<T>('POST', path, o),
    put: <T = any>(path: string, o?: RequestOptions) => request<T>('PUT', path, o),
    patch: <T = any>(path: string, o?: RequestOptions) => request<T>('PATCH', path, o),
    delete: <T = any>(path: string, o?: RequestOptions) => request<T>('DELETE', path, o),
    close: () => dispatcher.close(),
  };
}

export type HttpsClient = ReturnType<typeof createHttpsClient>;

/**
 * The HttpsClient shape, each request on a connection of its own: behind a balancer that picks a
 * backend per connection, every request may land on another instance.
 */
export function perRequestClient(baseUrl: string, options: ClientOptions): HttpsClient {
  const shape = createHttpsClient(baseUrl, options);
  void shape.close();
  const request = async (method: string, path: string, o?: RequestOptions) => {
    const c = createHttpsClient(baseUrl, options);
    try {
      return await c.request(method, path, o);
    } finally {
      await c.close();
    }
  };
  return {
    ...shape,
    request,
    get: (p, o) => request('GET', p, o),
    post: (p, o) => request('POST', p, o),
    put: (p, o) => request('PUT', p, o),
    patch: (p, o) => request('PATCH', p, o),
    delete: (p, o) => request('DELETE', p, o),
    close: async () => undefined,
  };
}
