// tsyringe (inside @peculiar/x509 2.x) throws at load time unless Reflect metadata is installed
// first; ESM evaluates imports in order, so this import must stay above the x509 one.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';

// Node's webcrypto types and the DOM lib's differ only nominally; x509 is typed against the DOM lib.
export const webCrypto = webcrypto as unknown as Crypto;

// Set once here rather than relying on globalThis.crypto, so every PKI module signs and verifies
// with the same provider; import x509 from this module only.
x509.cryptoProvider.set(webCrypto);

export { x509 };
