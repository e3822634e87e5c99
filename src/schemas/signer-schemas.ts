import { z } from 'zod';
import {
  booleanField,
  boundedInt,
  nonEmpty,
  optionalText,
  optionalUrl,
  stringList,
} from './schema-fields.js';
import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';
import { strictBody } from './strict-body.js';

/** A year: a JWT meant to live longer is a standing credential, not a login. */
export const MAX_TOKEN_LIFETIME_MINUTES = 525_600;

/**
 * External JWT signer bodies. All members optional here; the service fills
 * create/PUT from the defaults and PATCH from the stored signer, then checks the combined rules
 * (name and issuer present, exactly one of certPem and jwksEndpoint).
 */
const fields = {
  name: nonEmpty(255).optional(),
  enabled: booleanField.optional(),
  issuer: nonEmpty(1024).optional(),
  audience: optionalText(1024),
  certPem: optionalText(65_536),
  jwksEndpoint: optionalUrl,
  kid: optionalText(255),
  claimsProperty: nonEmpty(255)
    .refine((s) => /^\/?[^/]+(\/[^/]+)*$/.test(s), 'must be a claim name or a JSON pointer such as /sub')
    .optional(),
  useExternalId: booleanField.optional(),
  externalAuthUrl: optionalUrl,
  clientId: optionalText(255),
  scopes: stringList(50),
  maxTokenLifetimeMinutes: boundedInt(1, MAX_TOKEN_LIFETIME_MINUTES)
    .optional()
    .describe(
      'The longest lifetime a JWT of this signer may claim, in minutes (`exp` − `iat`, or `exp` − now ' +
        'without `iat`); a longer-lived JWT is refused. Default 1440 (one day), at most 525600 (a year).',
    ),
};

/** OpenZiti's `tags`, which this service does not keep for signers. */
export const SIGNER_IGNORED_MEMBERS = ['tags'] as const;

export const signerPatchSchema = strictBody(fields, SIGNER_IGNORED_MEMBERS);

export const signerCreateSchema = strictBody(
  { ...fields, name: nonEmpty(255), issuer: nonEmpty(1024) },
  SIGNER_IGNORED_MEMBERS,
);

export type SignerPatch = z.output<typeof signerPatchSchema>;

/** API field → column, for list filters and sorting. */
export const signerListFields = {
  id: { column: 'id', type: 'string' },
  name: { column: 'name', type: 'string' },
  issuer: { column: 'issuer', type: 'string' },
  enabled: { column: 'enabled', type: 'boolean' },
  createdAt: { column: 'created_at', type: 'datetime' },
  updatedAt: { column: 'updated_at', type: 'datetime' },
} satisfies ListFields;

export const parseSignerList = listQueryParser(signerListFields, 'name');
