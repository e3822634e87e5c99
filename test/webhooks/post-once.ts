import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { createOutboundPost } from '../../src/services/webhooks/outbound-post.js';

/**
 * Run as its own process (proxy variables are read when Node starts): POSTs once to argv[3] trusting
 * the CA file argv[4], through the outbound module (`outbound`) or Node's global agent (`global`,
 * the control), and prints the status or the error message.
 */
const [mode, url, caFile] = process.argv.slice(2) as [string, string, string];
const ca = readFileSync(caFile, 'utf8');

function viaGlobalAgent(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end('{}');
  });
}

const outcome =
  mode === 'global'
    ? viaGlobalAgent()
    : createOutboundPost({ allowPrivateTargets: true, extraCa: ca, timeoutMs: 5000 })(url, '{}', {}).then(
        (r) => r.status,
      );
outcome.then(
  (status) => process.stdout.write(`status ${status}\n`),
  (err: Error) => process.stdout.write(`error ${err.message}\n`),
);
