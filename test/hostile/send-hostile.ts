import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import type { HostileRequest } from './hostile-requests.js';

export interface Exchange {
  request: HostileRequest;
  response?: TestResponse;
  /** The client could not read an answer at all (the connection died). */
  failure?: string;
  ms: number;
}

/** Sends `requests` with at most `inFlight` at a time; every request gets an exchange. */
export async function sendAll(
  client: HttpsClient,
  requests: HostileRequest[],
  inFlight: number,
  onExchange: (e: Exchange) => void,
  /** The client of a request that presents a TLS client certificate. */
  clientFor: (request: HostileRequest) => HttpsClient = () => client,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const request = requests[next++]!;
      const t0 = performance.now();
      try {
        const response = await clientFor(request).request(request.method, request.path, {
          headers: request.headers,
          body: request.body,
        });
        onExchange({ request, response, ms: performance.now() - t0 });
      } catch (err) {
        onExchange({ request, failure: (err as Error).message, ms: performance.now() - t0 });
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** The request and its answer, truncated, so that a failure can be replayed by hand. */
export function describeExchange(e: Exchange): string {
  const r = e.request;
  const lines = [
    `${r.method} ${cut(r.path, 200)}  [${r.caller}${r.clientCertificate !== undefined ? `, client certificate ${r.clientCertificate}` : ''}]`,
    `  request headers: ${cut(JSON.stringify(r.headers), 300)}`,
    ...(r.body !== undefined ? [`  request body: ${cut(JSON.stringify(r.body), 300)}`] : []),
  ];
  if (e.response) {
    lines.push(`  response: ${e.response.status} ${String(e.response.header('content-type') ?? '')}`);
    lines.push(`  response body: ${cut(e.response.text, 400)}`);
  } else lines.push(`  no response: ${e.failure}`);
  lines.push(`  took ${Math.round(e.ms)} ms`);
  return lines.join('\n');
}
