import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError, validationError } from '../errors/app-error.js';
import { sendCreated, sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import {
  caCreateSchema,
  caReplaceSchema,
  caUpdateSchema,
  parseBlockedCertificateList,
  parseCaList,
} from '../schemas/ca-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

const PEM_TYPES = ['text/plain', 'application/x-pem-file'];

/** The verify body: the PEM text itself (the one body that is neither JSON nor a form). */
function pemBody(ctx: Context): string {
  const body = ctx.request.body as unknown;
  if (typeof body === 'string') return body;
  if (body && typeof body === 'object' && Object.keys(body).length > 0) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', {
      message: 'the verification certificate must be sent as text/plain or application/x-pem-file',
    });
  }
  throw validationError('body', 'must hold a PEM certificate');
}

/** `/cas` of the management API; admins only. */
export function caRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const cas = deps.cas;
  const blocks = deps.certificateBlocks;

  router.get('/cas', admin, async (ctx: Context) => {
    const page = await cas.list(parseCaList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.post('/cas', admin, parseBody(), async (ctx: Context) => {
    const id = await cas.create(parseInput(caCreateSchema, bodyOf(ctx)));
    sendCreated(ctx, 'cas', id);
  });

  router.get('/cas/:id', admin, async (ctx: Context) => {
    sendData(ctx, await cas.get(pathId(ctx)));
  });

  router.put('/cas/:id', admin, parseBody(), async (ctx: Context) => {
    await cas.update(pathId(ctx), parseInput(caReplaceSchema, bodyOf(ctx)), true);
    sendEmpty(ctx);
  });

  router.patch('/cas/:id', admin, parseBody(), async (ctx: Context) => {
    await cas.update(pathId(ctx), parseInput(caUpdateSchema, bodyOf(ctx)), false);
    sendEmpty(ctx);
  });

  router.delete('/cas/:id', admin, parseBody(), async (ctx: Context) => {
    await cas.remove(pathId(ctx));
    sendEmpty(ctx);
  });

  router.post('/cas/:id/verify', admin, parseBody(PEM_TYPES), async (ctx: Context) => {
    sendData(ctx, await cas.verify(pathId(ctx), pemBody(ctx)));
  });

  router.get('/cas/:id/blocked-certificates', admin, async (ctx: Context) => {
    const page = await blocks.listBlocked(pathId(ctx), parseBlockedCertificateList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.delete('/cas/:id/blocked-certificates/:entryId', admin, parseBody(), async (ctx: Context) => {
    await blocks.unblock(pathId(ctx), pathId(ctx, 'entryId'));
    sendEmpty(ctx);
  });
}
