import type Router from '@koa/router';
import type { Context } from 'koa';
import { clientSpec } from '../openapi/client-spec.js';
import { managementSpec } from '../openapi/management-spec.js';

/**
 * `GET /spec`: the API's OpenAPI 3.1 document, anonymous. Built and serialized
 * once when the router is made.
 */
export function specRoutes(router: Router, api: 'client' | 'management'): void {
  const document = api === 'client' ? clientSpec() : managementSpec();
  const json = JSON.stringify(document);
  router.get('/spec', (ctx: Context) => {
    ctx.type = 'application/json';
    ctx.body = json;
  });
}
