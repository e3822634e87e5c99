// A static server for the single-page app: its page, its script, the browser bundle of
// oidc-client-ts straight from node_modules, and /config.json naming the controller.
// Run: node examples/spa/server.js   (then open http://localhost:3001)
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const bundleDir = join(
  dirname(createRequire(import.meta.url).resolve('oidc-client-ts/package.json')),
  'dist',
  'browser',
);
const issuer = new URL(process.env.SVC_ISSUER ?? 'https://127.0.0.1:1280/oidc');
const config = {
  authority: issuer.href.replace(/\/$/, ''),
  clientId: process.env.SVC_CLIENT_ID ?? 'svc',
  api: new URL(process.env.SVC_API_URL ?? '/edge/client/v1/', issuer).href,
};

const files = {
  '/app.js': [join(here, 'app.js'), 'text/javascript'],
  '/vendor/oidc-client-ts.min.js': [join(bundleDir, 'oidc-client-ts.min.js'), 'text/javascript'],
  '/vendor/oidc-client-ts.min.js.map': [join(bundleDir, 'oidc-client-ts.min.js.map'), 'application/json'],
};
/** The app's own routes: the page itself decides what to show. */
const pages = new Set(['/', '/auth/callback', '/auth/logout']);

// The page runs only its own scripts and talks only to itself and the controller.
const csp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  `connect-src 'self' ${issuer.origin}`,
  "img-src 'self' data:",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const server = createServer(async (req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  const send = (status, type, body) => {
    res.writeHead(status, {
      'content-type': type,
      'content-security-policy': csp,
      'cache-control': 'no-store',
    });
    res.end(body);
  };
  try {
    if (req.method !== 'GET') return send(405, 'text/plain', 'method not allowed');
    if (pages.has(path))
      return send(200, 'text/html; charset=utf-8', await readFile(join(here, 'index.html')));
    if (path === '/style.css') return send(200, 'text/css', await readFile(join(here, 'style.css')));
    if (path === '/config.json') return send(200, 'application/json', JSON.stringify(config));
    if (Object.hasOwn(files, path)) {
      const [file, type] = files[path];
      return send(200, type, await readFile(file));
    }
    send(404, 'text/plain', 'not found');
  } catch (err) {
    console.error(err);
    send(500, 'text/plain', 'server error');
  }
});

server.listen(Number(process.env.PORT ?? 3001), '127.0.0.1', () => {
  console.log(`spa listening on http://localhost:${server.address().port}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
