import { z } from 'zod';
import { booleanField, nonEmpty, stringList, text } from './schema-fields.js';

/** 3rd-party CA bodies. The certificate is fixed at creation. */
const flags = {
  isAuthEnabled: booleanField.optional(),
  isOttCaEnrollmentEnabled: booleanField.optional(),
  isAutoCaEnrollmentEnabled: booleanField.optional(),
  identityRoles: stringList(256),
  // Placeholders of auto CA enrollment: [caName], [caId], [commonName], [requestedName], [identityId].
  identityNameFormat: nonEmpty(255).optional(),
};

export const caCreateSchema = z.object({
  name: nonEmpty(255),
  certPem: text(65_536).min(1, 'must not be empty'),
  ...flags,
});

/** PUT and PATCH: certPem may be repeated unchanged (a PUT of the detail), never changed. */
export const caUpdateSchema = z.object({
  name: nonEmpty(255).optional(),
  certPem: text(65_536).optional(),
  ...flags,
});

export const caReplaceSchema = caUpdateSchema.extend({ name: nonEmpty(255) });

export type CaCreateInput = z.output<typeof caCreateSchema>;
export type CaUpdateInput = z.output<typeof caUpdateSchema>;
