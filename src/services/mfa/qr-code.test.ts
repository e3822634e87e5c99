import { describe, expect, test } from '@jest/globals';
import { qrDataUrl, qrPng } from './qr-code.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('QR codes of provisioning URLs', () => {
  const url = 'otpauth://totp/svc:alice?issuer=svc&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';

  test('qrPng gives a square PNG and qrDataUrl the same image as a data URL', async () => {
    const png = await qrPng(url);
    const dataUrl = await qrDataUrl(url);

    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(png.readUInt32BE(16)).toBe(png.readUInt32BE(20));
    expect(dataUrl.startsWith('data:image/png;base64,')).toBe(true);
    expect(Buffer.from(dataUrl.slice('data:image/png;base64,'.length), 'base64')).toEqual(png);
  });
});
