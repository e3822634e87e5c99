import { z } from 'zod';
import {
  auditEventViewSchema,
  cursorListMetaSchema,
  cursorPaginationSchema,
} from '../schemas/audit-event-views.js';
import { blockedCertificateViewSchema, caViewSchema } from '../schemas/ca-views.js';
import {
  authenticatorViewSchema,
  enrolledCertificateSchema,
  enrollmentViewSchema,
} from '../schemas/enrollment-views.js';
import {
  createdEnvelopeSchema,
  emptyEnvelopeSchema,
  errorEnvelopeSchema,
  listMetaSchema,
  paginationSchema,
} from '../schemas/envelope-views.js';
import { identityDetailSchema } from '../schemas/identity-views.js';
import { keyViewSchema } from '../schemas/key-views.js';
import {
  recoveryCodesRemainingSchema,
  recoveryCodesSchema,
  totpDetailSchema,
  totpEnrollmentSchema,
} from '../schemas/mfa-views.js';
import {
  passkeyAssertionOptionsSchema,
  passkeyCeremonySchema,
  passkeyRequestOptionsSchema,
} from '../schemas/passkey-login-views.js';
import { authPolicyViewSchema } from '../schemas/policy-views.js';
import {
  passkeyCreatedSchema,
  passkeyCreationOptionsSchema,
  passkeyRegistrationOptionsSchema,
  passkeySchema,
} from '../schemas/passkey-views.js';
import {
  apiSessionDetailSchema,
  apiSessionSchema,
  authQuerySchema,
  currentApiSessionSchema,
  ownApiSessionSchema,
} from '../schemas/session-views.js';
import { publicSignerViewSchema, signerViewSchema } from '../schemas/signer-views.js';
import {
  webhookCreatedSchema,
  webhookDeliveryAttemptSchema,
  webhookDeliveryListMetaSchema,
  webhookDeliverySchema,
  webhookSecretRotatedSchema,
  webhookViewSchema,
} from '../schemas/webhook-views.js';
import { controllerVersionViewSchema } from '../schemas/version-views.js';
import type { JsonSchema } from './json-schema.js';

/** Component name → the zod schema the services' views are typed against (src/schemas/*-views.ts). */
const views: Record<string, z.ZodType> = {
  Pagination: paginationSchema,
  ListMeta: listMetaSchema,
  EmptyEnvelope: emptyEnvelopeSchema,
  CreatedEnvelope: createdEnvelopeSchema,
  ErrorEnvelope: errorEnvelopeSchema,
  Identity: identityDetailSchema,
  Enrollment: enrollmentViewSchema,
  Authenticator: authenticatorViewSchema,
  AuthPolicy: authPolicyViewSchema,
  ExternalJwtSigner: signerViewSchema,
  PublicExternalJwtSigner: publicSignerViewSchema,
  Ca: caViewSchema,
  BlockedCertificate: blockedCertificateViewSchema,
  SigningKey: keyViewSchema,
  AuthQuery: authQuerySchema,
  ApiSession: apiSessionSchema,
  CurrentApiSession: currentApiSessionSchema,
  ApiSessionDetail: apiSessionDetailSchema,
  OwnApiSession: ownApiSessionSchema,
  TotpEnrollment: totpEnrollmentSchema,
  TotpDetail: totpDetailSchema,
  RecoveryCodesRemaining: recoveryCodesRemainingSchema,
  RecoveryCodes: recoveryCodesSchema,
  Passkey: passkeySchema,
  PasskeyCreated: passkeyCreatedSchema,
  PasskeyOptions: passkeyRegistrationOptionsSchema,
  PasskeyCreationOptions: passkeyCreationOptionsSchema,
  EnrolledCertificate: enrolledCertificateSchema,
  PasskeyRequestOptions: passkeyRequestOptionsSchema,
  PasskeyCeremony: passkeyCeremonySchema,
  PasskeyAssertionOptions: passkeyAssertionOptionsSchema,
  Webhook: webhookViewSchema,
  WebhookCreated: webhookCreatedSchema,
  WebhookSecretRotated: webhookSecretRotatedSchema,
  WebhookDelivery: webhookDeliverySchema,
  WebhookDeliveryAttempt: webhookDeliveryAttemptSchema,
  WebhookDeliveryListMeta: webhookDeliveryListMetaSchema,
  AuditEvent: auditEventViewSchema,
  CursorPagination: cursorPaginationSchema,
  CursorListMeta: cursorListMetaSchema,
  ControllerVersion: controllerVersionViewSchema,
};

/**
 * What the Edge APIs answer, generated from the response views: one registry, so a view used
 * inside another (AuthQuery in ApiSession, Pagination in ListMeta) is a `$ref` to its component.
 * `io: 'output'` describes what the server writes; an object lists every member it may hold
 * (`additionalProperties: false`), so a view that grows a field must grow its schema too.
 */
function generate(): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(views)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
    override: ({ jsonSchema }) => {
      // `format: date-time` says it; zod's equivalent regular expression only adds noise.
      if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
    },
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _dialect, $id: _id, ...json }]) => [id, json]),
  );
}

export const responseSchemas: Record<string, JsonSchema> = generate();
