import {
  chmodSync,
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError } from './cli-error.js';

/** What `svc login -u` keeps: the controller, its CA (PEM text, not a path) and the session token. */
export interface LegacySession {
  url: string;
  token: string;
  ca: string;
}

/** What `svc login --device` keeps: OIDC tokens, refreshed before the access token expires. */
export interface OidcSession {
  kind: 'oidc';
  url: string;
  ca: string;
  /** The token endpoint discovery named at login; the refreshes go there. */
  tokenEndpoint: string;
  accessToken: string;
  /** When the access token was issued and when it expires (ISO 8601), to refresh in time. */
  obtainedAt: string;
  accessTokenExpiresAt: string;
  /** Absent when the server issued none: the session then ends with its access token. */
  refreshToken?: string;
}

/** A session file without `kind` is a password login's: it holds a legacy session token. */
export type StoredSession = LegacySession | OidcSession;

export const isOidcSession = (s: StoredSession): s is OidcSession => 'kind' in s && s.kind === 'oidc';

/** `$XDG_CONFIG_HOME/svc/session.json`, else `~/.config/svc/session.json`. */
export function sessionPath(env: Record<string, string | undefined>): string {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, '.config') : undefined);
  if (!base) throw new CliError('neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep the session');
  return join(base, 'svc', 'session.json');
}

/**
 * Writes a file only its owner can read (the session token, private keys, enrollment JWTs). The
 * mode is set at creation and again afterwards, because `mode` is ignored for an existing file.
 */
export function writePrivateFile(path: string, content: string): void {
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
}

export function saveSession(env: Record<string, string | undefined>, session: StoredSession): string {
  const path = sessionPath(env);
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  // Write then rename: a crash never leaves a half-written session file behind.
  const temp = `${path}.${process.pid}.tmp`;
  writePrivateFile(temp, `${JSON.stringify(session, null, 2)}\n`);
  renameSync(temp, path);
  return path;
}

export function loadSession(env: Record<string, string | undefined>): StoredSession {
  const path = sessionPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new CliError('not logged in: run svc login <url> -u <user> -p <password> first');
  }
  let parsed: Partial<StoredSession>;
  try {
    parsed = JSON.parse(text) as Partial<StoredSession>;
  } catch {
    throw new CliError(`${path} is not valid JSON: run svc login again`);
  }
  const incomplete = () => new CliError(`${path} is incomplete: run svc login again`);
  if (parsed === null || typeof parsed !== 'object') throw incomplete();
  if ((parsed as { kind?: unknown }).kind === 'oidc') {
    const p = parsed as Partial<OidcSession>;
    const strings = [p.url, p.ca, p.tokenEndpoint, p.accessToken, p.obtainedAt, p.accessTokenExpiresAt];
    if (
      strings.some((v) => typeof v !== 'string') ||
      !['string', 'undefined'].includes(typeof p.refreshToken)
    )
      throw incomplete();
    return {
      kind: 'oidc',
      url: p.url!,
      ca: p.ca!,
      tokenEndpoint: p.tokenEndpoint!,
      accessToken: p.accessToken!,
      obtainedAt: p.obtainedAt!,
      accessTokenExpiresAt: p.accessTokenExpiresAt!,
      ...(p.refreshToken === undefined ? {} : { refreshToken: p.refreshToken }),
    };
  }
  const { url, token, ca } = parsed as Partial<LegacySession>;
  if (typeof url !== 'string' || typeof token !== 'string' || typeof ca !== 'string') throw incomplete();
  return { url, token, ca };
}

/**
 * A lock older than this was left by a process that died while refreshing: well past the API
 * client's 60 s inactivity limit, which ends a refresh that gets no answer.
 */
const STALE_LOCK_MS = 120_000;
/** How long a command waits for another one's refresh (which gives up after 60 s) before giving up. */
const LOCK_WAIT_MS = 75_000;

/**
 * Removes `lock` if it is (still) stale. Two commands may find the same stale lock, and the first
 * to remove it may create its own lock at once: a plain remove by the second would delete that
 * live one. So the lock is first renamed away to a name no other command uses (rename is atomic)
 * and judged there: a stale one is removed; a live one, created between the look and the rename,
 * is put back under its name, unless yet another command holds the lock by then.
 */
export function breakStaleLock(lock: string): void {
  const moved = `${lock}.${process.pid}.${randomBytes(6).toString('hex')}.stale`;
  try {
    renameSync(lock, moved);
  } catch {
    return; // gone already: released, or broken by another command
  }
  try {
    if (Date.now() - statSync(moved).mtimeMs <= STALE_LOCK_MS) linkSync(moved, lock);
  } catch {
    // `lock` exists again: another command holds it now
  } finally {
    rmSync(moved, { force: true });
  }
}

/**
 * Runs `fn` while holding `session.json.lock` (created exclusively). Refresh tokens rotate and a
 * rotated one presented again revokes the whole session, so two `svc` commands started together
 * must not both refresh: the second waits, then reads the tokens the first saved.
 */
export async function withSessionLock<T>(
  env: Record<string, string | undefined>,
  fn: () => Promise<T>,
): Promise<T> {
  const lock = `${sessionPath(env)}.lock`;
  mkdirSync(dirname(lock), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new CliError(`cannot lock ${lock}: ${(err as Error).message}`);
    }
    let age = 0;
    try {
      age = Date.now() - statSync(lock).mtimeMs;
    } catch {
      continue; // released in between: try again at once
    }
    if (age > STALE_LOCK_MS) breakStaleLock(lock);
    else if (Date.now() > deadline)
      throw new CliError(
        `${lock} is held by another svc command: try again, or remove it if none is running`,
      );
    else await sleep(100);
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
