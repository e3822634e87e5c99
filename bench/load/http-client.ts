import { Agent, type Dispatcher } from 'undici';

export interface BenchResponse {
  status: number;
  location?: string;
  text: string;
}

export interface BenchClient {
  origin: string;
  get(path: string, headers?: Record<string, string>): Promise<BenchResponse>;
  /** A GET whose body is read and dropped: the bearer loop needs only the status. */
  getStatus(path: string, headers?: Record<string, string>): Promise<number>;
  postJson(path: string, body: unknown, headers?: Record<string, string>): Promise<BenchResponse>;
  postForm(path: string, form: Record<string, string>): Promise<BenchResponse>;
  close(): Promise<void>;
}

const TIMEOUT_MS = 30_000;

/** Only loopback targets are ever benchmarked (nothing leaves the machine). */
function assertLoopback(origin: string): void {
  const { protocol, hostname } = new URL(origin);
  if (protocol !== 'https:' || hostname !== '127.0.0.1') {
    throw new Error(`refusing to load ${origin}: only https://127.0.0.1 targets are benchmarked`);
  }
}

/**
 * A keep-alive HTTPS client with at most `connections` sockets to one origin, trusting `ca`,
 * with no cookie jar and no redirect following, as a CLI drives the service.
 */
export function createBenchClient(
  origin: string,
  ca: string,
  connections: number,
  timeoutMs = TIMEOUT_MS,
): BenchClient {
  assertLoopback(origin);
  const agent = new Agent({
    connect: { ca, timeout: timeoutMs },
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function send(options: Omit<Dispatcher.RequestOptions, 'origin'>): Promise<BenchResponse> {
    const res = await agent.request({ origin, ...options });
    const location = res.headers.location;
    return {
      status: res.statusCode,
      location: Array.isArray(location) ? location[0] : location,
      text: await res.body.text(),
    };
  }

  return {
    origin,
    get: (path, headers = {}) => send({ method: 'GET', path, headers }),
    async getStatus(path, headers = {}) {
      const res = await agent.request({ origin, method: 'GET', path, headers });
      await res.body.dump();
      return res.statusCode;
    },
    postJson: (path, body, headers = {}) =>
      send({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }),
    postForm: (path, form) =>
      send({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      }),
    close: () => agent.close(),
  };
}
