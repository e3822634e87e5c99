import type Router from '@koa/router';
import type { Context } from 'koa';
import { validationError } from '../errors/app-error.js';
import { sendData, sendEmpty } from '../errors/envelope.js';
import { peerCertificateChain } from '../listeners/peer-certificates.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import {
  enrollCaSchema,
  enrollOttSchema,
  enrollTokenSchema,
  enrollUpdbSchema,
} from '../schemas/enrollment-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { RouteDeps } from './route-deps.js';

/** The token of `enroll/updb`: in the query, or in the body. */
const withQueryToken = (ctx: Context) => ({ token: ctx.query.token, ...bodyOf(ctx) });

/**
 * Completing an enrollment on the client API. No session: the enrollment token
 * is the credential.
 */
export function enrollRoutes(router: Router, deps: RouteDeps): void {
  const enroll = deps.enroll;

  router.post('/enroll/updb', parseBody(), async (ctx: Context) => {
    const input = parseInput(enrollUpdbSchema, withQueryToken(ctx));
    await enroll.updb(input.token, input.password);
    sendEmpty(ctx);
  });

  router.post('/enroll/ott', parseBody(), async (ctx: Context) => {
    const input = parseInput(enrollOttSchema, bodyOf(ctx));
    sendData(ctx, await enroll.ott(input.token, input.clientCsr));
  });

  router.post('/enroll/ottca', parseBody(), async (ctx: Context) => {
    const input = parseInput(enrollTokenSchema, withQueryToken(ctx));
    await enroll.ottca(input.token, peerCertificateChain(ctx));
    sendEmpty(ctx);
  });

  /** Auto CA enrollment: the TLS client certificate is the credential; answered like OTTCA. */
  const enrollCa = async (ctx: Context) => {
    const input = parseInput(enrollCaSchema, bodyOf(ctx));
    await enroll.ca(peerCertificateChain(ctx), input.name);
    sendEmpty(ctx);
  };

  router.post('/enroll/ca', parseBody(), enrollCa);

  // OpenZiti's generic form; the token methods have their own paths above.
  router.post('/enroll', parseBody(), async (ctx: Context) => {
    if (ctx.query.method !== 'ca')
      throw validationError('method', 'must be ca (token methods: /enroll/<method>)');
    await enrollCa(ctx);
  });
}
