import { describe, expect, it } from '@jest/globals';
import { firstPemBlock, MAX_PEM_BLOCKS, PemError, pemBlocks } from './pem-blocks.js';

const block = (label: string, bytes: number[]) =>
  `-----BEGIN ${label}-----\n${Buffer.from(bytes).toString('base64')}\n-----END ${label}-----`;

describe('pemBlocks', () => {
  it('returns each block of the label with its decoded bytes, skipping other labels and text', () => {
    const text = `intro\n${block('CERTIFICATE', [0x30, 1])}\n${block('PRIVATE KEY', [9])}\r\n${block('CERTIFICATE', [0x30, 2])}\n`;

    const blocks = pemBlocks(text, 'CERTIFICATE');

    expect(blocks.map((b) => [...b.der])).toEqual([
      [0x30, 1],
      [0x30, 2],
    ]);
    expect(blocks[0]!.pem).toBe(block('CERTIFICATE', [0x30, 1]));
  });

  it('does not take a CERTIFICATE REQUEST block for a CERTIFICATE block', () => {
    expect(pemBlocks(block('CERTIFICATE REQUEST', [0x30]), 'CERTIFICATE')).toEqual([]);
    expect(pemBlocks(block('CERTIFICATE REQUEST', [0x30]), 'CERTIFICATE REQUEST')).toHaveLength(1);
  });

  it('opens a block at the last BEGIN line before its END, and ignores a BEGIN without END', () => {
    const text = `-----BEGIN CERTIFICATE-----\ngarbage\n${block('CERTIFICATE', [0x30, 3])}\n-----BEGIN CERTIFICATE-----\nAAAA`;

    expect(pemBlocks(text, 'CERTIFICATE').map((b) => [...b.der])).toEqual([[0x30, 3]]);
  });

  it(`accepts ${MAX_PEM_BLOCKS} blocks and throws PemError past them, or past a given bound`, () => {
    const one = `${block('CERTIFICATE', [0x30])}\n`;

    expect(pemBlocks(one.repeat(MAX_PEM_BLOCKS), 'CERTIFICATE')).toHaveLength(MAX_PEM_BLOCKS);
    expect(() => pemBlocks(one.repeat(MAX_PEM_BLOCKS + 1), 'CERTIFICATE')).toThrow(PemError);
    expect(() => pemBlocks(one.repeat(2), 'CERTIFICATE', 1)).toThrow(PemError);
    expect(pemBlocks(one.repeat(100), 'CERTIFICATE', Number.POSITIVE_INFINITY)).toHaveLength(100);
  });

  it.each(['-----BEGIN CERTIFICATE-----', '-----BEGIN ', '-----END CERTIFICATE-----'])(
    'scans 1 MiB of %j in linear time',
    (unit) => {
      const text = unit.repeat(Math.ceil((1024 * 1024) / unit.length));

      const started = performance.now();
      const blocks = pemBlocks(text, 'CERTIFICATE');
      const elapsed = performance.now() - started;

      expect(blocks).toEqual([]);
      expect(elapsed).toBeLessThan(500); // milliseconds here; a backtracking regex takes minutes
    },
  );
});

describe('firstPemBlock', () => {
  it('is the first block however many follow, and undefined without one', () => {
    const many = `${block('CERTIFICATE', [0x30, 7])}\n`.repeat(MAX_PEM_BLOCKS * 2);

    expect([...firstPemBlock(many, 'CERTIFICATE')!.der]).toEqual([0x30, 7]);
    expect(firstPemBlock('no pem here', 'CERTIFICATE')).toBeUndefined();
  });
});
