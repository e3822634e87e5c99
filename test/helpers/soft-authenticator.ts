import { createHash, randomBytes, webcrypto } from 'node:crypto';

/**
 * A software WebAuthn authenticator for the tests: ES256 (P-256) keys on WebCrypto, attestation
 * "none", and the little CBOR that needs, encoded by hand, so the tests exercise the controller's
 * verification against bytes built independently of the library it uses.
 */

type Json = Record<string, unknown>;

const b64u = (bytes: Uint8Array | Buffer | string) =>
  (typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes)).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

// ---- CBOR (RFC 8949): unsigned and negative integers, byte and text strings, maps ----

export type CborValue = number | string | Uint8Array | Map<CborValue, CborValue> | { [k: string]: CborValue };

function head(major: number, length: number): Buffer {
  const m = major << 5;
  if (length < 24) return Buffer.from([m | length]);
  if (length < 0x100) return Buffer.from([m | 24, length]);
  if (length < 0x10000) {
    const b = Buffer.alloc(3);
    b[0] = m | 25;
    b.writeUInt16BE(length, 1);
    return b;
  }
  const b = Buffer.alloc(5);
  b[0] = m | 26;
  b.writeUInt32BE(length, 1);
  return b;
}

export function cbor(value: CborValue): Buffer {
  if (typeof value === 'number') {
    return value >= 0 ? head(0, value) : head(1, -1 - value);
  }
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)]);
  const entries: [CborValue, CborValue][] =
    value instanceof Map ? [...value.entries()] : Object.entries(value);
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([k, v]) => [cbor(k), cbor(v)])]);
}

// ---- ECDSA: WebCrypto signs r||s; WebAuthn wants DER ----

function derInteger(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  let v = bytes.subarray(i);
  if (v[0]! & 0x80) v = Buffer.concat([Buffer.from([0]), v]);
  return Buffer.concat([Buffer.from([0x02, v.length]), v]);
}

function rawToDer(raw: Buffer): Buffer {
  const body = Buffer.concat([derInteger(raw.subarray(0, 32)), derInteger(raw.subarray(32))]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

// ---- the authenticator ----

export interface SoftCredential {
  id: Buffer;
  keys: webcrypto.CryptoKeyPair;
  rpId: string;
  userHandle: string;
  counter: number;
  /** The authenticator keeps no counter: it always reports 0. */
  zeroCounter: boolean;
}

export interface CeremonyOverrides {
  origin?: string;
  rpId?: string;
  /** The counter to report (and keep) instead of the next one. */
  signCount?: number;
  userVerified?: boolean;
  userPresent?: boolean;
  challenge?: string;
  /** `webauthn.create` / `webauthn.get` by default. */
  type?: string;
  /**
   * Which stored credential answers (base64url), instead of the first allowed one; at a
   * registration, a credential already held is registered again.
   */
  credentialId?: string;
  /** Registration: an authenticator that keeps no signature counter. */
  zeroCounter?: boolean;
  /** Backup eligible and backed up (a synced passkey). */
  backedUp?: boolean;
  /** Replaces the encoded clientDataJSON (garbage tests). */
  clientDataJSON?: string;
}

export function createSoftAuthenticator({ origin, rpId }: { origin: string; rpId: string }) {
  const credentials: SoftCredential[] = [];

  function clientData(type: string, challenge: string, o: CeremonyOverrides): string {
    return (
      o.clientDataJSON ??
      b64u(
        JSON.stringify({
          type: o.type ?? type,
          challenge: o.challenge ?? challenge,
          origin: o.origin ?? origin,
          crossOrigin: false,
        }),
      )
    );
  }

  function flags(o: CeremonyOverrides, attested: boolean): number {
    let f = 0;
    if (o.userPresent !== false) f |= 0x01;
    if (o.userVerified !== false) f |= 0x04;
    if (o.backedUp) f |= 0x08 | 0x10;
    if (attested) f |= 0x40;
    return f;
  }

  const counterBytes = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
  };

  async function coseKey(keys: webcrypto.CryptoKeyPair): Promise<Buffer> {
    const jwk = await webcrypto.subtle.exportKey('jwk', keys.publicKey);
    return cbor(
      new Map<CborValue, CborValue>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
  }

  /** `navigator.credentials.create` for the options the controller returned. */
  async function register(options: Json, o: CeremonyOverrides = {}): Promise<Json> {
    // `credentialId`: answer with a credential this authenticator already holds (its id and key).
    const existing = credentials.find((c) => b64u(c.id) === o.credentialId);
    const keys =
      existing?.keys ??
      ((await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
        'sign',
        'verify',
      ])) as webcrypto.CryptoKeyPair);
    const id = existing?.id ?? randomBytes(16);
    const user = options.user as { id: string };
    const effectiveRpId = o.rpId ?? rpId;
    const zeroCounter = o.zeroCounter ?? false;
    const counter = o.signCount ?? (zeroCounter ? 0 : 1);
    const authData = Buffer.concat([
      sha256(effectiveRpId),
      Buffer.from([flags(o, true)]),
      counterBytes(counter),
      Buffer.alloc(16), // aaguid: none
      Buffer.from([id.length >> 8, id.length & 0xff]),
      id,
      await coseKey(keys),
    ]);
    if (!existing)
      credentials.push({ id, keys, rpId: effectiveRpId, userHandle: user.id, counter, zeroCounter });
    const attestationObject = cbor({ fmt: 'none', attStmt: {}, authData });
    return {
      id: b64u(id),
      rawId: b64u(id),
      type: 'public-key',
      response: {
        clientDataJSON: clientData('webauthn.create', options.challenge as string, o),
        attestationObject: b64u(attestationObject),
        transports: ['internal'],
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  function pick(options: Json, o: CeremonyOverrides): SoftCredential {
    const allowed = ((options.allowCredentials as { id: string }[] | undefined) ?? []).map((c) => c.id);
    const found = credentials.find((c) =>
      o.credentialId !== undefined
        ? b64u(c.id) === o.credentialId
        : allowed.length > 0
          ? allowed.includes(b64u(c.id))
          : c.rpId === (options.rpId ?? rpId),
    );
    if (!found) throw new Error('soft authenticator: no matching credential');
    return found;
  }

  /** `navigator.credentials.get`; with empty allowCredentials, a discoverable credential answers. */
  async function assert(options: Json, o: CeremonyOverrides = {}): Promise<Json> {
    const credential = pick(options, o);
    const counter = o.signCount ?? (credential.zeroCounter ? 0 : credential.counter + 1);
    credential.counter = counter;
    const authData = Buffer.concat([
      sha256(o.rpId ?? credential.rpId),
      Buffer.from([flags(o, false)]),
      counterBytes(counter),
    ]);
    const clientDataJSON = clientData('webauthn.get', options.challenge as string, o);
    const signed = Buffer.concat([authData, sha256(Buffer.from(clientDataJSON, 'base64url'))]);
    const raw = Buffer.from(
      await webcrypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, credential.keys.privateKey, signed),
    );
    return {
      id: b64u(credential.id),
      rawId: b64u(credential.id),
      type: 'public-key',
      response: {
        clientDataJSON,
        authenticatorData: b64u(authData),
        signature: b64u(rawToDer(raw)),
        userHandle: credential.userHandle,
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  return {
    credentials,
    register,
    assert,
    /** A copy holding the same keys and counters: what a cloned authenticator would be. */
    clone() {
      const copy = createSoftAuthenticator({ origin, rpId });
      copy.credentials.push(...credentials.map((c) => ({ ...c })));
      return copy;
    },
  };
}

export type SoftAuthenticator = ReturnType<typeof createSoftAuthenticator>;
