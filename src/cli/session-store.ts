import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CliError } from './cli-error.js';

/** What `svc login` keeps: the controller, its CA (PEM text, not a path) and the session token. */
export interface StoredSession {
  url: string;
  token: string;
  ca: string;
}

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
  const { url, token, ca } = parsed;
  if (typeof url !== 'string' || typeof token !== 'string' || typeof ca !== 'string') {
    throw new CliError(`${path} is incomplete: run svc login again`);
  }
  return { url, token, ca };
}
