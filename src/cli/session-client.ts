import { createApiClient, type ApiClient } from './api-client.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { freshSession } from './oidc-session.js';
import { isOidcSession, loadSession } from './session-store.js';

/**
 * Runs `fn` with a client of the stored session: an OIDC session (`svc login --device`) sends its
 * access token as `Authorization: Bearer`, refreshed first when it is about to expire; a password
 * login's sends `svc-session`. An ended session says how to get a new one.
 */
export async function withSessionApi<T>(io: CliIo, fn: (api: ApiClient) => Promise<T>): Promise<T> {
  const stored = loadSession(io.env);
  const session = isOidcSession(stored) ? await freshSession(io.env, stored) : stored;
  const api = createApiClient(
    isOidcSession(session)
      ? { url: session.url, ca: session.ca, accessToken: session.accessToken }
      : { url: session.url, ca: session.ca, token: session.token },
  );
  try {
    return await fn(api);
  } catch (err) {
    if (err instanceof CliError && err.message.includes('(UNAUTHORIZED')) {
      throw new CliError(`${err.message}: the session has ended, run svc login again`);
    }
    throw err;
  } finally {
    await api.close();
  }
}

/** A filter string literal of the list API: only `"` and `\` need escaping. */
export function filterString(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

const PAGE = 500;

/** Every item of a list endpoint, page by page (the API returns at most 500 at a time). */
export async function listAll<T>(api: ApiClient, path: string, filter?: string): Promise<T[]> {
  const items: T[] = [];
  for (;;) {
    const { data, meta } = await api.get<T[]>(path, { query: { filter, limit: PAGE, offset: items.length } });
    items.push(...data);
    const total = (meta.pagination as { totalCount?: number } | undefined)?.totalCount ?? items.length;
    if (data.length === 0 || items.length >= total) return items;
  }
}
