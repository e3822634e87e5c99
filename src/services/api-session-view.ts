import type { Knex } from 'knex';
import { mapPage, type ListPage, type ListQuery } from '../db/list-query.js';
import { AppError } from '../errors/app-error.js';
import {
  apiSessionsRepository,
  type LiveApiSession,
  type LiveSessionsScope,
} from '../repositories/api-sessions-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import type { ApiSessionDetailView, OwnApiSessionView } from '../schemas/session-views.js';

export interface ApiSessionViewDeps {
  knex: Knex;
  /** edge.oidc.maxSessionDuration in seconds: the ceiling of a legacy session (session-service.ts). */
  maxSessionDuration: number;
  now?: () => Date;
}

/** What admins and the identity itself see of a live API session (docs/operations.md). */
export function apiSessionDetail(s: LiveApiSession): ApiSessionDetailView {
  return {
    id: s.id,
    identity: { id: s.identityId, name: s.identityName },
    kind: s.kind,
    authMethod: s.authMethod,
    amr: s.amr,
    ipAddress: s.ipAddress,
    createdAt: s.createdAt.toISOString(),
    lastActivityAt: s.lastActivityAt.toISOString(),
    expiresAt: s.expiresAt.toISOString(),
    isMfaRequired: s.mfaRequired,
    isMfaComplete: s.mfaComplete,
  };
}

/**
 * The read side of API sessions: who is signed in, legacy and OIDC alike. Only live sessions are
 * shown; an ended or expired one is as gone as a deleted one.
 */
export function createApiSessionView({
  knex,
  maxSessionDuration,
  now = () => new Date(),
}: ApiSessionViewDeps) {
  const scope = (identityId?: string): LiveSessionsScope => ({
    now: now(),
    legacyMaxSeconds: maxSessionDuration,
    ...(identityId !== undefined ? { identityId } : {}),
  });

  const page = async (q: ListQuery, identityId?: string) =>
    mapPage(await apiSessionsRepository.listLive(knex, q, scope(identityId)), (items) =>
      items.map(apiSessionDetail),
    );

  return {
    /** Every identity's live sessions. */
    list(q: ListQuery): Promise<ListPage<ApiSessionDetailView>> {
      return page(q);
    },

    /** One live session; 404 when there is none by that id. */
    async get(id: string): Promise<ApiSessionDetailView> {
      const found = await apiSessionsRepository.findLive(knex, id, scope());
      if (!found) throw new AppError('NOT_FOUND', { message: 'no live API session with this id' });
      return apiSessionDetail(found);
    },

    /** The live sessions of one identity; 404 for an unknown identity. */
    async listForIdentity(identityId: string, q: ListQuery): Promise<ListPage<ApiSessionDetailView>> {
      if (!(await identitiesRepository.findById(knex, identityId))) throw new AppError('NOT_FOUND');
      return page(q, identityId);
    },

    /** The caller's own live sessions, the one it calls with marked `isCurrent`. */
    async listOwn(
      caller: { identityId: string; sessionId: string },
      q: ListQuery,
    ): Promise<ListPage<OwnApiSessionView>> {
      const own = await apiSessionsRepository.listLive(knex, q, scope(caller.identityId));
      return mapPage(own, (items) =>
        items.map((s) => ({ ...apiSessionDetail(s), isCurrent: s.id === caller.sessionId })),
      );
    },
  };
}

export type ApiSessionView = ReturnType<typeof createApiSessionView>;
