import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createApiClient } from './api-client.js';
import { CliError, UsageError } from './cli-error.js';
import { deviceLogin } from './device-login.js';
import { note, out, type CliIo } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { promptPassword, readPasswordFromStdin } from './password-input.js';
import { saveSession } from './session-store.js';
import { getWithoutVerification, parsePemBundle } from './unverified-tls.js';

interface LoginData {
  token: string;
  identityId: string;
  identity: { id: string; name: string };
  expiresAt: string;
}

/** `https://host:port` from what the user typed; a bare `host:port` means HTTPS (the service speaks nothing else). */
export function controllerOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`);
  } catch {
    throw new UsageError(`"${text}" is not a URL`);
  }
  if (url.protocol !== 'https:')
    throw new UsageError(`the controller URL must use https, not ${url.protocol}`);
  return url.origin;
}

function readCaFile(io: CliIo, file: string): string {
  let pem: string;
  try {
    pem = readFileSync(resolve(io.cwd, file), 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the CA file ${file}: ${(err as Error).message}`);
  }
  parsePemBundle(pem, `the CA file ${file}`);
  return pem;
}

/**
 * Trust on first use, only when asked (`--yes`): the CA bundle is taken from an unverified
 * connection and its fingerprints printed so the user can compare them out of band.
 */
async function fetchCaUnverified(io: CliIo, origin: string): Promise<string> {
  const { text } = await getWithoutVerification(
    new URL('/.well-known/est/cacerts', origin),
    'application/x-pem-file',
  );
  const certs = parsePemBundle(text, `the CA bundle of ${origin}`);
  note(io, `Trusting the CA bundle served by ${origin} without verification:`);
  for (const cert of certs)
    note(io, `  ${cert.subject.replace(/\n/g, ', ')}  SHA-256 ${cert.fingerprint256}`);
  return text;
}

async function obtainCa(ctx: CommandContext, origin: string): Promise<string> {
  const caFile = stringOption(ctx.values, 'ca');
  if (caFile) return readCaFile(ctx.io, caFile);
  if (ctx.values.yes) return fetchCaUnverified(ctx.io, origin);
  throw new CliError(
    `the CA of ${origin} is not known: pass --ca <data dir>/pki/ca.pem (from the controller's data directory), ` +
      'or --yes to trust the CA the server sends over an unverified first connection',
  );
}

async function runDevice(ctx: CommandContext, origin: string): Promise<void> {
  for (const option of ['username', 'password', 'password-stdin'])
    if (ctx.values[option] !== undefined)
      throw new UsageError(`--device signs in on another device: it takes no --${option}`);
  const ca = await obtainCa(ctx, origin);
  const { path, session, identity } = await deviceLogin(ctx.io, ctx.json, origin, ca);
  if (ctx.json)
    out(
      ctx.io,
      JSON.stringify(
        {
          url: origin,
          sessionFile: path,
          identityId: identity.id,
          identity: { id: identity.id, name: identity.name },
          accessTokenExpiresAt: session.accessTokenExpiresAt,
          refreshable: session.refreshToken !== undefined,
        },
        null,
        2,
      ),
    );
  else
    out(
      ctx.io,
      `Logged in to ${origin} as ${identity.name}; the access token is refreshed before it expires`,
    );
}

async function run(ctx: CommandContext): Promise<void> {
  const origin = controllerOrigin(ctx.positionals[0]!);
  if (ctx.values.device) return runDevice(ctx, origin);
  const username = stringOption(ctx.values, 'username');
  if (!username) throw new UsageError('svc login needs -u <user>, or --device');
  const ca = await obtainCa(ctx, origin);
  let password = stringOption(ctx.values, 'password');
  if (password === undefined) {
    password = ctx.values['password-stdin']
      ? await readPasswordFromStdin(ctx.io)
      : await promptPassword(ctx.io);
  }
  const api = createApiClient({ url: origin, ca });
  try {
    const { data } = await api.post<LoginData>('/edge/management/v1/authenticate', {
      query: { method: 'password' },
      body: { username, password },
    });
    const path = saveSession(ctx.io.env, { url: origin, token: data.token, ca });
    const { token: _token, ...shown } = data;
    if (ctx.json) out(ctx.io, JSON.stringify({ url: origin, sessionFile: path, ...shown }, null, 2));
    else
      out(
        ctx.io,
        `Logged in to ${origin} as ${data.identity.name}; the session expires at ${data.expiresAt}`,
      );
  } finally {
    await api.close();
  }
}

export const loginCommand: CommandSpec = {
  words: ['login'],
  args: '<url>',
  summary:
    'log in with a username and password, or on another device (--device), and keep the session for the other commands',
  options: {
    device: { type: 'boolean' },
    username: { type: 'string', short: 'u' },
    password: { type: 'string', short: 'p' },
    'password-stdin': { type: 'boolean' },
    ca: { type: 'string' },
    yes: { type: 'boolean', short: 'y' },
  },
  optionHelp: [
    [
      '--device',
      'sign in on another device (a phone): prints a URL and a code (a QR code on a terminal), and waits',
    ],
    ['-u, --username <user>', 'the username (required without --device)'],
    ['-p, --password <password>', 'the password; asked on the terminal when omitted'],
    ['--password-stdin', 'read the password from stdin'],
    ['--ca <file>', "PEM file of the controller's CA, e.g. <data dir>/pki/ca.pem"],
    ['-y, --yes', 'without --ca: trust the CA the server sends (prints its fingerprint)'],
  ],
  positionals: { min: 1, max: 1 },
  run,
};
