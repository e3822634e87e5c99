import { createHash } from 'node:crypto';
import { advisoryXactLock } from '../db/advisory-xact-lock.js';
import { inTransaction } from '../db/transaction.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import { generateRootCa, generateSigningCa, issueServerCert, type KeyedCert } from '../crypto/pki.js';
import { splitPemBundle, toPkcs7Base64 } from '../crypto/certificates.js';
import { secretsRepository } from '../repositories/secrets-repository.js';

export interface PkiMaterial {
  /** Signs client certificates (OTT enrollment). */
  signingCa: KeyedCert;
  /** Our TLS identity: leaf followed by its chain. */
  server: KeyedCert;
  /** The certificates clients should trust, and that client certificates chain to. */
  caCertsPem: string[];
  /** `GET /.well-known/est/cacerts` bodies. */
  caBundlePem: string;
  caBundlePkcs7: string;
}

export interface PkiOptions {
  knex: Knex;
  box: SecretBox;
  /** Hosts the server certificate must name (advertised hosts, localhost, 127.0.0.1). */
  hosts: string[];
  dataDir: string;
  tls: { cert?: string; key?: string; ca?: string };
  pki: { signingCert?: string; signingKey?: string };
}

const PKI_LOCK_KEY = 8319395793566789481n;

interface StoredCert {
  certPem: string;
  keyPemSealed: string;
}

async function loadOrCreate(
  trx: Knex.Transaction,
  box: SecretBox,
  name: string,
  create: () => Promise<KeyedCert>,
): Promise<KeyedCert> {
  const stored = await secretsRepository.get(trx, name);
  if (stored) {
    const { certPem, keyPemSealed } = JSON.parse(stored) as StoredCert;
    return { certPem, keyPem: box.open(keyPemSealed) };
  }
  const made = await create();
  const value: StoredCert = { certPem: made.certPem, keyPemSealed: box.seal(made.keyPem) };
  await secretsRepository.put(trx, name, JSON.stringify(value));
  return made;
}

const readPem = (file: string) => readFileSync(file, 'utf8');

/**
 * The service's PKI: generated once, under a lock, and kept in the database
 * with sealed private keys so that every instance shares it; configured PEM files replace parts.
 * The public PEM files are written to `$SVC_DATA_DIR/pki/` for operators and clients.
 */
export async function ensurePki(o: PkiOptions): Promise<PkiMaterial> {
  const hosts = [...new Set(o.hosts)].sort();
  const generated = await inTransaction(o.knex, async (trx) => {
    await advisoryXactLock(trx, { id: PKI_LOCK_KEY });
    const root = await loadOrCreate(trx, o.box, 'pki.root', () =>
      generateRootCa({ commonName: 'svc root CA' }),
    );
    const signing = o.pki.signingCert
      ? { certPem: readPem(o.pki.signingCert), keyPem: readPem(o.pki.signingKey!) }
      : await loadOrCreate(trx, o.box, 'pki.signing', () =>
          generateSigningCa(root, { commonName: 'svc signing CA' }),
        );
    const hostsKey = createHash('sha256').update(hosts.join(',')).digest('hex').slice(0, 16);
    const server = o.tls.cert
      ? { certPem: readPem(o.tls.cert), keyPem: readPem(o.tls.key!) }
      : await loadOrCreate(trx, o.box, `pki.server.${hostsKey}`, async () => {
          const leaf = await issueServerCert(signing, { hosts });
          return { certPem: leaf.certPem + signing.certPem, keyPem: leaf.keyPem };
        });
    return { root, signing, server };
  });
  // One newline-terminated block each: split blocks end at `-----END CERTIFICATE-----`, and joined
  // without a separator they would run into one unreadable bundle.
  const caCertsPem = [
    // The operator's own file, read once at start: no bound on how many CAs it lists.
    ...(o.tls.ca ? splitPemBundle(readPem(o.tls.ca), Number.POSITIVE_INFINITY) : [generated.root.certPem]),
    ...splitPemBundle(generated.signing.certPem),
  ].map((pem) => `${pem.trim()}\n`);
  const material: PkiMaterial = {
    signingCa: generated.signing,
    server: generated.server,
    caCertsPem,
    caBundlePem: caCertsPem.join(''),
    caBundlePkcs7: toPkcs7Base64(caCertsPem),
  };
  writePemFiles(o.dataDir, generated.root.certPem, material);
  return material;
}

function writePemFiles(dataDir: string, rootPem: string, m: PkiMaterial): void {
  const dir = join(dataDir, 'pki');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'ca.pem'), m.caBundlePem);
  writeFileSync(join(dir, 'root-ca.pem'), rootPem);
  writeFileSync(join(dir, 'signing-ca.pem'), m.signingCa.certPem);
  writeFileSync(join(dir, 'server-chain.pem'), m.server.certPem);
}
