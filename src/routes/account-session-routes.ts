import type Router from '@koa/router';
import type { Context } from 'koa';
import { parseApiSessionList } from '../schemas/api-session-schemas.js';
import type { AccountSession } from '../services/account/account-session-service.js';
import {
  accountOf,
  formField,
  noticeFrom,
  pageSession,
  seeOther,
  SESSION_COOKIE,
  setCookie,
  type Guards,
} from './account-guards.js';
import { renderSessionsPage } from './account-pages.js';
import type { RouteDeps } from './route-deps.js';

const NOTICES: Record<string, string> = {
  'session-ended': 'The session was ended.',
};

/** The sessions page: the identity's live API sessions, and ending one. */
export function accountSessionRoutes(router: Router, deps: RouteDeps, { signedIn, change }: Guards): void {
  const list = async (s: AccountSession) => {
    const page = await deps.apiSessionView.listOwn(
      { identityId: s.principal.identityId, sessionId: s.principal.sessionId },
      parseApiSessionList({ limit: '100' }),
    );
    return page.items;
  };

  router.get('/sessions', signedIn, async (ctx: Context) => {
    renderSessionsPage(ctx, pageSession(ctx), await list(accountOf(ctx)), {
      notice: noticeFrom(ctx, NOTICES),
    });
  });

  router.post('/sessions/end', ...change, async (ctx) => {
    const s = accountOf(ctx);
    const id = formField(ctx, 'session', 255);
    await deps.apiSessionEnding.endOwnSession(s.principal.identityId, id);
    if (id === s.principal.sessionId) {
      // The page's own API session: the page's session is over as well.
      await deps.accountSessions.signOut(ctx.cookies.get(SESSION_COOKIE));
      setCookie(ctx, SESSION_COOKIE, null, 0, 'strict');
      return seeOther(ctx, '/account/?done=signed-out');
    }
    seeOther(ctx, '/account/sessions?done=session-ended');
  });
}
