import { certFingerprint } from '../../src/crypto/certificates.js';
import { generateRootCa, issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import { newId } from '../../src/crypto/random.js';
import { casRepository } from '../../src/repositories/cas-repository.js';
import type { RequestOptions, TestResponse } from '../helpers/https-client.js';
import type { TestServer } from '../helpers/test-server.js';

export const MGMT = '/edge/management/v1';
export const CLIENT = '/edge/client/v1';

/** Management calls with a legacy session token, as an admin client makes them. */
export function managementApi(server: TestServer, token: string) {
  const withSession = (o: RequestOptions = {}): RequestOptions => ({
    ...o,
    headers: { 'svc-session': token, ...o.headers },
  });
  return {
    get: (path: string, o?: RequestOptions) => server.client.get(MGMT + path, withSession(o)),
    post: (path: string, o?: RequestOptions) => server.client.post(MGMT + path, withSession(o)),
    put: (path: string, o?: RequestOptions) => server.client.put(MGMT + path, withSession(o)),
    patch: (path: string, o?: RequestOptions) => server.client.patch(MGMT + path, withSession(o)),
    delete: (path: string, o?: RequestOptions) => server.client.delete(MGMT + path, withSession(o)),
  };
}

export type ManagementApi = ReturnType<typeof managementApi>;

/** Creates an identity through the API and returns its id; fails the test on anything but 201. */
export async function createIdentity(api: ManagementApi, body: Record<string, unknown>): Promise<string> {
  const res = await api.post('/identities', { body });
  if (res.status !== 201) throw new Error(`identity create failed: ${res.status} ${res.text}`);
  return res.body.data.id as string;
}

export async function identityDetail(api: ManagementApi, id: string): Promise<any> {
  const res = await api.get(`/identities/${id}`);
  if (res.status !== 200) throw new Error(`identity detail failed: ${res.status} ${res.text}`);
  return res.body.data;
}

export function passwordLogin(server: TestServer, username: string, password: string): Promise<TestResponse> {
  return server.client.post(`${CLIENT}/authenticate?method=password`, { body: { username, password } });
}

/** A UPDB identity created, enrolled and logged in; returns its id and a legacy session token. */
export async function enrolledUpdbUser(
  server: TestServer,
  api: ManagementApi,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; username: string; password: string; token: string }> {
  const id = await createIdentity(api, { name, isAdmin: false, enrollment: { updb: name }, ...extra });
  const { token: enrollmentToken } = (await identityDetail(api, id)).enrollment.updb;
  const password = `Pw-${name}-1234`;
  const enrolled = await server.client.post(`${CLIENT}/enroll/updb?token=${enrollmentToken}`, {
    body: { password },
  });
  if (enrolled.status !== 200) throw new Error(`enroll failed: ${enrolled.status} ${enrolled.text}`);
  const login = await passwordLogin(server, name, password);
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return { id, username: name, password, token: login.body.data.token as string };
}

/** An identity with one enrollment; returns the identity id and that enrollment's token, JWT and expiry. */
export async function pendingEnrollment(
  api: ManagementApi,
  name: string,
  enrollment: Record<string, unknown>,
): Promise<{ identityId: string; token: string; jwt: string; expiresAt: string }> {
  const identityId = await createIdentity(api, { name, isAdmin: false, enrollment });
  const detail = await identityDetail(api, identityId);
  const [method] = Object.keys(detail.enrollment);
  const { token, jwt, expiresAt } = detail.enrollment[method!];
  return { identityId, token, jwt, expiresAt };
}

/** A registered 3rd-party CA row, written directly (the row is the contract with the CA service). */
export async function registerCa(
  server: TestServer,
  ca: KeyedCert,
  flags: { isVerified: boolean; isOttCaEnrollmentEnabled: boolean },
): Promise<string> {
  const id = newId();
  await casRepository.insert(server.app.knex, {
    id,
    name: `ca-${id}`,
    certPem: ca.certPem,
    fingerprint: certFingerprint(ca.certPem),
    isAuthEnabled: true,
    isAutoCaEnrollmentEnabled: false,
    identityRoles: [],
    verificationToken: newId(),
    ...flags,
  });
  return id;
}

/**
 * A CA registered through the management API and, unless told otherwise, verified as an admin
 * would: a certificate it issued, naming the verification token as its common name.
 */
export async function registerCaByApi(
  api: ManagementApi,
  name: string,
  body: Record<string, unknown> = {},
  { verified = true }: { verified?: boolean } = {},
): Promise<{ id: string; ca: KeyedCert }> {
  const ca = await generateRootCa({ commonName: `${name} root` });
  const created = await api.post('/cas', { body: { name, certPem: ca.certPem, ...body } });
  if (created.status !== 201) throw new Error(`CA create failed: ${created.status} ${created.text}`);
  const id = created.body.data.id as string;
  if (verified) {
    const { verificationToken } = (await api.get(`/cas/${id}`)).body.data;
    const proof = await issueClientCert(ca, { commonName: verificationToken });
    const res = await api.post(`/cas/${id}/verify`, {
      body: proof.certPem,
      headers: { 'content-type': 'text/plain' },
    });
    if (res.status !== 200) throw new Error(`CA verify failed: ${res.status} ${res.text}`);
  }
  return { id, ca };
}
