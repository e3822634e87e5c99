import { request } from 'node:https';
import type { OutboundPost } from '../../src/services/webhooks/outbound-post.js';

/**
 * TEST ONLY: a plain HTTPS POST trusting `ca`, for webhook delivery tests while the controller's
 * own outbound POST (src/services/webhooks/outbound-post.ts) is a placeholder. It has none of that
 * module's target checks; the tests switch to the real one once it exists.
 */
export function plainHttpsPostForTests(ca: string, timeoutMs = 10_000): OutboundPost {
  return (url, body, headers) =>
    new Promise((resolve, reject) => {
      const started = Date.now();
      const req = request(
        url,
        {
          method: 'POST',
          ca,
          agent: false,
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (text.length < 65536) text += chunk;
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              bodyPreview: text.slice(0, 65536),
              durationMs: Date.now() - started,
            }),
          );
          res.on('error', reject);
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
}
