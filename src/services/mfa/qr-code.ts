import QRCode from 'qrcode';

// Medium error correction and a 4-module quiet zone: what phone authenticator apps scan reliably.
const OPTIONS = { errorCorrectionLevel: 'M', margin: 4, width: 256 } as const;

/** A PNG QR code of a provisioning URL (`GET /current-identity/mfa/qr-code`). */
export function qrPng(url: string): Promise<Buffer> {
  return QRCode.toBuffer(url, { ...OPTIONS, type: 'png' });
}

/** The same PNG as a `data:image/png;base64,…` URL, for the OIDC TOTP enrollment page. */
export function qrDataUrl(url: string): Promise<string> {
  return QRCode.toDataURL(url, { ...OPTIONS, type: 'image/png' });
}
