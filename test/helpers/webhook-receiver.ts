import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { generateRootCa, issueServerCert } from '../../src/crypto/pki.js';

/** One request as the receiver got it, checked when it arrived (timestamps are checked against now). */
export interface ReceivedAttempt {
  /** The request's path: tests give each webhook a URL of its own. */
  path: string;
  id: string;
  timestamp: number;
  signatures: string[];
  userAgent: string | undefined;
  contentType: string | undefined;
  body: string;
  /** Every header as received. */
  headers: Record<string, string>;
  /** The names of the secrets in `state.secrets` that `standardwebhooks` verifies the request with. */
  verifiedWith: string[];
  /** Per signature in the header: the names of the secrets that verify it on its own. */
  signatureVerifiedWith: string[][];
  /** What the receiver answered; `hung` until then. */
  answered: number | 'hung' | 'dropped';
}

export type ReceiverMode = number | 'hang';

/**
 * A webhook receiver over real HTTPS on 127.0.0.1, its certificate from a CA of its own (`ca`).
 * It verifies every request with the `standardwebhooks` package against `state.secrets`, answers
 * `mode` (a status, or `hang`: no answer until `release`), and counts deliveries of one
 * webhook-id that overlapped in time (`overlaps`).
 */
export async function startWebhookReceiver() {
  const ca = await generateRootCa({ commonName: 'Webhook Receiver Test CA' });
  const leaf = await issueServerCert(ca, { hosts: ['127.0.0.1', 'localhost'] });
  const dir = mkdtempSync(join(tmpdir(), 'svc-webhook-receiver-'));
  const caFile = join(dir, 'receiver-ca.pem');
  writeFileSync(caFile, ca.certPem);
  const state = {
    /** The secrets to verify with, by a name the test chooses. */
    secrets: new Map<string, string>(),
    mode: 200 as ReceiverMode,
    /** Answers come this much later (ms), so that a second sender of one delivery would overlap. */
    delayMs: 0,
    /** A mode for one webhook's path (`/name`), over `mode`. */
    modes: new Map<string, ReceiverMode>(),
    attempts: [] as ReceivedAttempt[],
    overlaps: [] as string[],
  };
  const inFlight = new Set<string>();
  const hung = new Set<() => void>();
  const server: Server = createServer({ key: leaf.keyPem, cert: leaf.certPem }, (req, res) => {
    const id = String(req.headers['webhook-id'] ?? '');
    if (inFlight.has(id)) state.overlaps.push(id);
    inFlight.add(id);
    res.on('close', () => inFlight.delete(id));
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const headers = {
        'webhook-id': id,
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      const verifies = (secret: string, h: typeof headers) => {
        try {
          new Webhook(secret).verify(body, h);
          return true;
        } catch {
          return false;
        }
      };
      const indexes = (ok: (secret: string) => boolean) =>
        [...state.secrets].flatMap(([name, secret]) => (ok(secret) ? [name] : []));
      const signatures = headers['webhook-signature'].split(' ').filter(Boolean);
      const attempt: ReceivedAttempt = {
        path: req.url ?? '',
        id,
        timestamp: Number(headers['webhook-timestamp']),
        signatures,
        userAgent: req.headers['user-agent'],
        contentType: req.headers['content-type'],
        body,
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        verifiedWith: indexes((s) => verifies(s, headers)),
        signatureVerifiedWith: signatures.map((sig) =>
          indexes((s) => verifies(s, { ...headers, 'webhook-signature': sig })),
        ),
        answered: 'hung',
      };
      state.attempts.push(attempt);
      const answer = (status: number) => {
        attempt.answered = status;
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'not now');
      };
      const mode = state.modes.get(attempt.path.slice(1)) ?? state.mode;
      if (mode === 'hang') {
        const release = () => {
          hung.delete(release);
          answer(200);
        };
        hung.add(release);
        res.on('close', () => {
          if (attempt.answered === 'hung') attempt.answered = 'dropped';
          hung.delete(release);
        });
      } else if (state.delayMs > 0) {
        setTimeout(() => answer(mode), state.delayMs);
      } else {
        answer(mode);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    /** The receiver's URL for a webhook named `name`. */
    urlFor: (name: string) => `https://127.0.0.1:${port}/${name}`,
    /** The CA the receiver's certificate is from, and a file holding it. */
    ca: ca.certPem,
    caFile,
    /**
     * The settings a controller needs to deliver here, as an operator sets them: private targets
     * allowed (the receiver is on 127.0.0.1) and the receiver's CA trusted.
     */
    controllerEnv: { SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', SVC_WEBHOOKS_CA: caFile },
    state,
    /** The attempts at `/name` answered 2xx, in arrival order. */
    delivered: (name: string) =>
      state.attempts.filter(
        (a) => a.path === `/${name}` && typeof a.answered === 'number' && a.answered < 300,
      ),
    /** Every attempt at `/name`, in arrival order. */
    attemptsAt: (name: string) => state.attempts.filter((a) => a.path === `/${name}`),
    /** Answers every hung request 200. */
    release: () => [...hung].forEach((r) => r()),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }).finally(() => rmSync(dir, { recursive: true, force: true })),
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
