import { generateRootCa, issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import { KEY_CERT_SIGN, pemText, signCertificate } from '../../src/crypto/pki-sign.js';
import { x509 } from '../../src/crypto/x509-runtime.js';

/**
 * A leaf and `count` self-issued CA certificates that share one name and one key, so each of them
 * verifies as the issuer of the leaf and of every other one: the worst case for a chain builder
 * that tries orderings of the intermediates. Only `ca` itself could be trusted.
 */
export async function selfIssuedChain(
  count: number,
  commonName = 'Self Issued CA',
): Promise<{ ca: KeyedCert; leaf: KeyedCert; intermediates: string[] }> {
  const ca = await generateRootCa({ commonName });
  const publicKey = new x509.X509Certificate(ca.certPem).publicKey;
  const intermediates: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const cert = await signCertificate(ca, {
      subjectCn: commonName,
      publicKey,
      validityDays: 30,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(KEY_CERT_SIGN, true),
      ],
    });
    intermediates.push(pemText(cert));
  }
  const leaf = await issueClientCert(ca, { commonName: `leaf of ${commonName}` });
  return { ca, leaf, intermediates };
}
