import { CONTROL_REASON } from '../../src/schemas/safe-text.js';
import type { TestResponse } from '../helpers/https-client.js';
import { validatorFor } from '../openapi/response-validator.js';
import type { HostileRequest } from './hostile-requests.js';
import type { Operation } from './operations.js';

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `{"error":{"code","message","cause"?,"requestId"},"meta":{"apiVersion":"1"}}` (README, APIs). */
export function edgeEnvelopeProblems(res: TestResponse): string[] {
  const b = res.body;
  if (!isObject(b)) return [`not a JSON object: ${String(res.header('content-type'))}`];
  const problems: string[] = [];
  const extra = Object.keys(b).filter((k) => k !== 'error' && k !== 'meta');
  if (extra.length) problems.push(`unexpected members ${extra.join(', ')}`);
  if (!isObject(b.error)) return [...problems, 'no error object'];
  if (typeof b.error.code !== 'string' || !/^[A-Z_]+$/.test(b.error.code)) problems.push('error.code');
  if (typeof b.error.message !== 'string' || !b.error.message) problems.push('error.message');
  if (typeof b.error.requestId !== 'string') problems.push('error.requestId');
  if ('cause' in b.error && !isObject(b.error.cause)) problems.push('error.cause');
  if (!isObject(b.meta) || b.meta.apiVersion !== '1') problems.push('meta.apiVersion');
  return problems;
}

/** Whether an Accept header takes HTML over JSON, as koa's `ctx.accepts('json', 'html')` decides. */
function prefersHtml(accept: string | string[] | undefined): boolean {
  const ranges = String(accept ?? '')
    .split(',')
    .map((r) => {
      const [type = '', ...params] = r.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      return { type: type.trim().toLowerCase(), q: q ? Number(q.slice(2)) : 1 };
    });
  const quality = (t: string) =>
    Math.max(
      0,
      ...ranges
        .filter((r) => r.type === t || r.type === `${t.split('/')[0]}/*` || r.type === '*/*')
        .map((r) => r.q),
    );
  return quality('text/html') > quality('application/json');
}

/** RFC 6749 §5.2: `{"error","error_description"?}` with an ASCII error code. */
export function oauthErrorProblems(res: TestResponse): string[] {
  const b = res.body;
  if (!isObject(b)) return [`not a JSON object: ${String(res.header('content-type'))}`];
  const problems: string[] = [];
  if (typeof b.error !== 'string' || !/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/.test(b.error))
    problems.push(`error is not an RFC 6749 error code: ${JSON.stringify(b.error)?.slice(0, 80)}`);
  if ('error_description' in b && typeof b.error_description !== 'string') problems.push('error_description');
  return problems;
}

/** A page of the person's side: the login pages' CSP (no script) and a heading saying what happened. */
export function pageProblems(res: TestResponse): string[] {
  const problems: string[] = [];
  if (!String(res.header('content-security-policy')).includes("default-src 'none'"))
    problems.push(`page without the login pages' CSP: ${res.header('content-security-policy')}`);
  if (/<script/i.test(res.text)) problems.push('page with a script');
  if (!/<h1>[^<]+<\/h1>/.test(res.text)) problems.push('page without a heading');
  return problems;
}

/** The response the Edge document names for this status, checked against its schema. */
function documentedProblems(op: Operation, res: TestResponse): string[] {
  const path = op.path.slice(op.doc.servers[0].url.length);
  return validatorFor(op.doc)
    .problems(op.method, path, res, { bodyOnly: true })
    .map((p) => `${op.key} not as documented: ${p}`);
}

/** Everything wrong with one answer to a hostile request; empty when it is acceptable. */
export function responseProblems(op: Operation, req: HostileRequest, res: TestResponse): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`status ${res.status}`);
  if (req.oversize && req.caller.startsWith('admin') && res.status !== 413 && res.status < 500) {
    // A body over the limit is refused before anything reads it (docs/operations.md).
    // A query with control characters is refused before the body is read, just as early.
    const badQuery = res.status === 400 && res.body?.error?.cause?.reason === CONTROL_REASON;
    // The OAuth endpoints and the device code form read bodies with the provider's own, smaller
    // limit (400); the code form sends a post without its session back to the form unread (303).
    const providerRefusal = op.errorShape !== 'edge' && res.status === 400;
    const backToForm = op.errorShape === 'page' && res.status === 303;
    if (!badQuery && !providerRefusal && !backToForm) problems.push(`oversize body answered ${res.status}`);
  }
  // Writes get only bodies that can never be valid, or ids that do not exist.
  if (op.writes && res.status < 300)
    problems.push(`a write that can never be valid was accepted: ${res.status}`);
  if (op.doc) problems.push(...documentedProblems(op, res));
  else if (res.status >= 400) {
    const edge = edgeEnvelopeProblems(res);
    const oauth = oauthErrorProblems(res);
    // A login step answers a browser (its Accept prefers HTML to JSON) with a page (oidc-login-http.ts).
    const browserPage =
      op.path.startsWith('/oidc/login/') &&
      String(res.header('content-type')).startsWith('text/html') &&
      prefersHtml(req.headers.accept);
    if (op.errorShape === 'edge' && !browserPage) problems.push(...edge.map((p) => `Edge envelope: ${p}`));
    // RFC 6750 §3.1: a request without any token gets the bare challenge and no error code.
    const bareBearer =
      res.status === 401 &&
      res.header('www-authenticate') === 'Bearer realm="svc-oidc"' &&
      JSON.stringify(res.body) === '{}';
    if (op.errorShape === 'oauth' && !bareBearer) problems.push(...oauth.map((p) => `RFC 6749 body: ${p}`));
    if (op.errorShape === 'edge-or-oauth' && edge.length && oauth.length)
      problems.push(`neither envelope: ${edge.join('; ')}`);
    if (op.errorShape === 'page') {
      if (String(res.header('content-type')).startsWith('text/html')) problems.push(...pageProblems(res));
      else problems.push(...edge.map((p) => `neither a page nor the Edge envelope: ${p}`));
    }
  } else if (res.status >= 300) {
    if (!res.header('location')) problems.push(`${res.status} without Location`);
    if (op.path === '/oidc/authorization' && ![302, 303].includes(res.status))
      problems.push(`authorization answered ${res.status}`);
  }
  return problems;
}
