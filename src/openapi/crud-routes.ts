import type { ErrorCode } from '../errors/error-catalog.js';
import { listEnvelope } from './components.js';
import { ref } from './json-schema.js';
import type { RouteDoc } from './operations.js';
import { dataResponse, emptyResponse } from './session-paths.js';

/** One management collection: its path, its name in ids and words, its views. */
export interface Collection {
  path: string;
  tag: string;
  /** PascalCase, for operation ids: `Identity` → listIdentities, getIdentity … */
  singular: string;
  plural: string;
  /** In summaries: `identity`, `identities`. */
  noun: string;
  nouns: string;
  /** Component names of the detail and of the create, replace and patch bodies. */
  view: string;
  create: string;
  replace: string;
  patch: string;
}

export type Extra = { description?: string; errors?: ErrorCode[] };

export const admin = { access: 'admin' } as const;

/** The list, create, get, replace, patch and delete of a collection, each extendable by `extra`. */
export function crud(
  c: Collection,
  extra: Partial<Record<'create' | 'replace' | 'patch' | 'delete', Extra>> = {},
) {
  const item = `${c.path}/:id`;
  const a = `${/^[aeiou]/i.test(c.noun) ? 'an' : 'a'} ${c.noun}`;
  return {
    list: {
      ...admin,
      method: 'get',
      path: c.path,
      operationId: `list${c.plural}`,
      summary: `List ${c.nouns}`,
      tag: c.tag,
      list: true,
      response: { status: 200, description: 'A page.', schema: listEnvelope(ref(c.view)) },
    },
    create: {
      ...admin,
      method: 'post',
      path: c.path,
      operationId: `create${c.singular}`,
      summary: `Create ${a}`,
      tag: c.tag,
      body: { schema: ref(c.create) },
      response: { status: 201, description: 'Created.', schema: ref('CreatedEnvelope') },
      ...extra.create,
    },
    get: {
      ...admin,
      method: 'get',
      path: item,
      operationId: `get${c.singular}`,
      summary: `One ${c.noun}`,
      tag: c.tag,
      response: dataResponse('The detail.', c.view),
    },
    replace: {
      ...admin,
      method: 'put',
      path: item,
      operationId: `replace${c.singular}`,
      summary: `Replace ${a}`,
      tag: c.tag,
      body: { schema: ref(c.replace) },
      response: emptyResponse('Replaced.'),
      ...extra.replace,
    },
    patch: {
      ...admin,
      method: 'patch',
      path: item,
      operationId: `patch${c.singular}`,
      summary: `Change some fields of ${a}`,
      tag: c.tag,
      body: { schema: ref(c.patch) },
      response: emptyResponse('Updated.'),
      ...extra.patch,
    },
    delete: {
      ...admin,
      method: 'delete',
      path: item,
      operationId: `delete${c.singular}`,
      summary: `Delete ${a}`,
      tag: c.tag,
      parsesBody: true,
      response: emptyResponse('Deleted.'),
      ...extra.delete,
    },
  } satisfies Record<string, RouteDoc>;
}
