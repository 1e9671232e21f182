/**
 * QR code as an SVG document, for the qr_code_svg field of POST /auth/mfa/enable. SVG rather than
 * PNG: it is text (fits in JSON), scales without blur, and the qrcode package renders it in pure JS.
 * The text is an otpauth:// URI holding the TOTP secret, so the result is as secret as the secret:
 * return it once, never log it.
 */
import { lazyImport } from '../runtime/lazy';

// loaded on the first MFA enrolment, not at every process's start
const loadQrCode = lazyImport(async () => (await import('qrcode')).default);

export const qrSvg = async (text: string): Promise<string> =>
  // Level M (15 % recovery) keeps a ~100-character URI at a small version that phone cameras read
  // easily; margin 4 is the quiet zone the QR standard requires.
  (await loadQrCode()).toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 });
