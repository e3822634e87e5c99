import { setTimeout as sleep } from 'node:timers/promises';
import { stripVTControlCharacters } from 'node:util';
import QRCode from 'qrcode';
import { createApiClient, UnreachableError, type ApiClient } from './api-client.js';
import { CliError } from './cli-error.js';
import { note, out, type CliIo } from './cli-io.js';
import { CLIENT_ID, oauthErrorText, sessionFromTokens } from './oidc-session.js';
import { saveSession, withSessionLock } from './session-store.js';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.2: a client waits 5 s between polls when the server names no interval. */
const DEFAULT_INTERVAL_S = 5;
/** RFC 8628 §3.5: each `slow_down` adds 5 s to the interval, for this and every later poll. */
const SLOW_DOWN_STEP_S = 5;
/** Answers of a server that is overloaded (429) or restarting behind a proxy (502-504): poll later. */
const BUSY = new Set([429, 502, 503, 504]);
/** The longest wait between polls that backing off from an overloaded or unreachable server reaches. */
const MAX_BACKOFF_INTERVAL_S = 60;

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

const stringField = (body: Record<string, unknown>, name: string, where: string): string => {
  const value = body[name];
  if (typeof value !== 'string' || value === '') throw new CliError(`${where} answered without ${name}`);
  return value;
};

/** The provider's endpoints, from discovery of the controller's issuer (`<url>/oidc`). */
async function discover(api: ApiClient) {
  const where = `${api.origin}/oidc/.well-known/openid-configuration`;
  const { status, body } = await api.oauth('GET', where);
  if (status !== 200) throw new CliError(`${where} answered HTTP ${status}`);
  if (typeof body.device_authorization_endpoint !== 'string')
    throw new CliError(`${api.origin} does not offer the device authorization grant`);
  return {
    deviceAuthorization: body.device_authorization_endpoint,
    token: stringField(body, 'token_endpoint', where),
  };
}

async function start(api: ApiClient, endpoint: string): Promise<DeviceAuthorization> {
  const { status, body } = await api.oauth('POST', endpoint, {
    client_id: CLIENT_ID,
    scope: 'openid offline_access',
  });
  if (status !== 200)
    throw new CliError(`the device authorization was refused (${oauthErrorText(status, body)})`);
  const expiresIn = body.expires_in;
  if (typeof expiresIn !== 'number' || !(expiresIn > 0))
    throw new CliError(`${endpoint} answered without expires_in`);
  const complete = body.verification_uri_complete;
  return {
    device_code: stringField(body, 'device_code', endpoint),
    user_code: stringField(body, 'user_code', endpoint),
    verification_uri: stringField(body, 'verification_uri', endpoint),
    verification_uri_complete: typeof complete === 'string' ? complete : undefined,
    expires_in: expiresIn,
    interval: typeof body.interval === 'number' && body.interval > 0 ? body.interval : undefined,
  };
}

/**
 * A QR code of `text` for a phone's camera, only on a terminal that can draw it: stdout is a
 * terminal, not a `dumb` one, and wide enough (two modules per character row, one per column).
 */
async function qrCode(io: CliIo, text: string): Promise<string | undefined> {
  if (!io.stdout.isTTY || io.env.TERM === 'dumb') return undefined;
  const qr = await QRCode.toString(text, { type: 'terminal', small: true });
  const width = Math.max(...qr.split('\n').map((line) => stripVTControlCharacters(line).length));
  const columns = Number(io.env.COLUMNS) || io.stdout.columns;
  if (columns !== undefined && columns < width) return undefined;
  return qr;
}

/** Tells the person where to go; on stderr with `--json`, whose stdout holds only the result. */
async function show(io: CliIo, json: boolean, started: DeviceAuthorization) {
  const say = (line: string) => (json ? note(io, line) : out(io, line));
  say(`To sign in, open ${started.verification_uri} and enter the code ${started.user_code}`);
  if (started.verification_uri_complete) {
    say(`or open ${started.verification_uri_complete}`);
    const qr = json ? undefined : await qrCode(io, started.verification_uri_complete);
    if (qr) io.stdout.write(qr.endsWith('\n') ? qr : `${qr}\n`);
  }
  say(`Waiting for the sign-in (the code expires in ${Math.round(started.expires_in / 60)} minutes)…`);
}

/** One poll of the token endpoint; undefined when the server could not be reached. */
async function pollOnce(api: ApiClient, tokenEndpoint: string, deviceCode: string) {
  try {
    return await api.oauth('POST', tokenEndpoint, {
      grant_type: DEVICE_GRANT,
      device_code: deviceCode,
      client_id: CLIENT_ID,
    });
  } catch (err) {
    if (err instanceof UnreachableError) return undefined;
    throw err;
  }
}

/** Polls the token endpoint per RFC 8628 §3.4–3.5 until the person confirms, declines or the code expires. */
async function poll(io: CliIo, api: ApiClient, tokenEndpoint: string, started: DeviceAuthorization) {
  let interval = started.interval ?? DEFAULT_INTERVAL_S;
  const deadline = Date.now() + started.expires_in * 1000;
  const expired = () =>
    new CliError(
      `the code ${started.user_code} expired before the sign-in was confirmed: run svc login --device again`,
    );
  for (;;) {
    await sleep(interval * 1000);
    const answer = await pollOnce(api, tokenEndpoint, started.device_code);
    // Overloaded, restarting or unreachable: the code is still good, so wait longer and poll
    // again (RFC 8628 §3.5 asks for a backoff on connection trouble) until it expires.
    if (answer === undefined || BUSY.has(answer.status)) {
      if (Date.now() > deadline) throw expired();
      interval = Math.max(interval, Math.min(interval + SLOW_DOWN_STEP_S, MAX_BACKOFF_INTERVAL_S));
      const why = answer === undefined ? 'could not be reached' : `is busy (HTTP ${answer.status})`;
      note(io, `the controller ${why}: asking again in ${interval} seconds`);
      continue;
    }
    const { status, body } = answer;
    if (status === 200) return body;
    switch (body.error) {
      case 'authorization_pending':
        if (Date.now() > deadline) throw expired();
        continue;
      case 'slow_down':
        interval += SLOW_DOWN_STEP_S;
        continue;
      case 'access_denied':
        throw new CliError('the sign-in was declined on the verification page: nothing was stored');
      case 'expired_token':
        throw expired();
      default:
        throw new CliError(`the device sign-in failed (${oauthErrorText(status, body)})`);
    }
  }
}

/**
 * `svc login --device`: the device authorization grant (RFC 8628). The person signs in elsewhere
 * (a phone, a laptop) with whatever the policy asks; the CLI keeps the access and refresh tokens.
 */
export async function deviceLogin(io: CliIo, json: boolean, origin: string, ca: string) {
  const api = createApiClient({ url: origin, ca });
  try {
    const endpoints = await discover(api);
    const started = await start(api, endpoints.deviceAuthorization);
    await show(io, json, started);
    const tokens = await poll(io, api, endpoints.token, started);
    const session = sessionFromTokens({ url: origin, ca, tokenEndpoint: endpoints.token }, tokens);
    const signedIn = createApiClient({ url: origin, ca, accessToken: session.accessToken });
    let identity: { id: string; name: string };
    try {
      ({ data: identity } = await signedIn.get<{ id: string; name: string }>(
        '/edge/management/v1/current-identity',
      ));
    } finally {
      await signedIn.close();
    }
    // Under the lock: a command refreshing the previous session meanwhile must not save over it.
    const path = await withSessionLock(io.env, async () => saveSession(io.env, session));
    return { path, session, identity };
  } finally {
    await api.close();
  }
}
