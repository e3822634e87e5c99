import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pemBlocks } from '../crypto/pem-blocks.js';

/**
 * The certificates of the PEM file `file`, one newline-terminated block each, anything between
 * blocks left out. Throws an Error saying what is wrong when the file cannot be read, holds no
 * certificate, or holds one that does not parse: a trust setting that silently trusts nothing
 * would only show up as failed connections later.
 */
export function readCertificatesFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file} (${(err as NodeJS.ErrnoException).code})`);
  }
  // The operator's own file, read once at start: no bound on how many certificates it holds.
  const blocks = pemBlocks(text, 'CERTIFICATE', Number.POSITIVE_INFINITY);
  if (blocks.length === 0) throw new Error(`${file} holds no PEM certificate`);
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block.der);
    } catch {
      throw new Error(`certificate ${i + 1} of ${file} does not parse`);
    }
  });
  return blocks.map((block) => `${block.pem}\n`).join('');
}
