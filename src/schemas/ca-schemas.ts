import { z } from 'zod';
import { booleanField, nonEmpty, stringList, text } from './schema-fields.js';
import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';
import { strictBody } from './strict-body.js';

/** 3rd-party CA bodies. The certificate is fixed at creation. */
const flags = {
  isAuthEnabled: booleanField.optional(),
  isOttCaEnrollmentEnabled: booleanField.optional(),
  isAutoCaEnrollmentEnabled: booleanField.optional(),
  identityRoles: stringList(256),
  // Placeholders of auto CA enrollment: [caName], [caId], [commonName], [requestedName], [identityId].
  identityNameFormat: nonEmpty(255).optional(),
};

/** OpenZiti's `tags`, which this service does not keep for CAs. */
export const CA_IGNORED_MEMBERS = ['tags'] as const;

export const caCreateSchema = strictBody(
  { name: nonEmpty(255), certPem: text(65_536).min(1, 'must not be empty'), ...flags },
  CA_IGNORED_MEMBERS,
);

/** PUT and PATCH: certPem may be repeated unchanged (a PUT of the detail), never changed. */
const updateFields = { name: nonEmpty(255).optional(), certPem: text(65_536).optional(), ...flags };

export const caUpdateSchema = strictBody(updateFields, CA_IGNORED_MEMBERS);

export const caReplaceSchema = strictBody({ ...updateFields, name: nonEmpty(255) }, CA_IGNORED_MEMBERS);

export type CaCreateInput = z.output<typeof caCreateSchema>;
export type CaUpdateInput = z.output<typeof caUpdateSchema>;

/** API field → column, for list filters and sorting. */
export const caListFields = {
  id: { column: 'id', type: 'string' },
  name: { column: 'name', type: 'string' },
  fingerprint: { column: 'fingerprint', type: 'string' },
  isAuthEnabled: { column: 'is_auth_enabled', type: 'boolean' },
  isOttCaEnrollmentEnabled: { column: 'is_ott_ca_enrollment_enabled', type: 'boolean' },
  isAutoCaEnrollmentEnabled: { column: 'is_auto_ca_enrollment_enabled', type: 'boolean' },
  isVerified: { column: 'is_verified', type: 'boolean' },
  createdAt: { column: 'created_at', type: 'datetime' },
  updatedAt: { column: 'updated_at', type: 'datetime' },
} satisfies ListFields;

export const parseCaList = listQueryParser(caListFields, 'name');

/** Blocked certificates of one CA: API field → column. */
export const blockedCertificateListFields = {
  id: { column: 'id', type: 'string' },
  tbsSha256: { column: 'tbs_sha256', type: 'string' },
  fingerprint: { column: 'fingerprint', type: 'string' },
  subject: { column: 'subject', type: 'string' },
  commonName: { column: 'common_name', type: 'string' },
  identityId: { column: 'identity_id', type: 'string' },
  identityName: { column: 'identity_name', type: 'string' },
  createdAt: { column: 'created_at', type: 'datetime' },
} satisfies ListFields;

export const parseBlockedCertificateList = listQueryParser(blockedCertificateListFields, 'createdAt asc');
