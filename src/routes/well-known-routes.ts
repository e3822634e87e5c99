import Router from '@koa/router';
import type { PkiMaterial } from '../services/pki-service.js';

/** `GET /.well-known/est/cacerts`: base64 PKCS#7 by default (RFC 7030), PEM on request. */
export function wellKnownRoutes(pki: PkiMaterial): Router {
  const router = new Router();
  router.get('/.well-known/est/cacerts', (ctx) => {
    if (ctx.accepts('application/pkcs7-mime', 'application/x-pem-file') === 'application/x-pem-file') {
      ctx.type = 'application/x-pem-file';
      ctx.body = pki.caBundlePem;
      return;
    }
    ctx.type = 'application/pkcs7-mime';
    ctx.set('content-transfer-encoding', 'base64');
    ctx.body = pki.caBundlePkcs7;
  });
  return router;
}
