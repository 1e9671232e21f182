/**
 * RFC 4648 §6 base32 (alphabet A–Z 2–7). TOTP secrets travel in this form because authenticator
 * apps expect it in otpauth:// URIs and people can type it by hand.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

const DECODE_TABLE: ReadonlyMap<string, number> = new Map([...ALPHABET].map((char, index) => [char, index]));

/** A remainder of 1, 3 or 6 characters in the last 8-character group cannot come from any byte count. */
const IMPOSSIBLE_TAIL_LENGTHS = new Set([1, 3, 6]);

export class Base32Error extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Base32Error';
  }
}

/**
 * Encodes bytes. Padding is off by default: the Key URI format used by authenticator apps says the
 * secret "should" be unpadded, and some apps reject '='.
 */
export const base32Encode = (bytes: Uint8Array, options: { padding?: boolean } = {}): string => {
  let output = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      output += ALPHABET[(buffer >>> bits) & 31];
    }
    buffer &= (1 << bits) - 1; // keep only the bits not emitted yet, so the accumulator never overflows
  }
  if (bits > 0) output += ALPHABET[(buffer << (5 - bits)) & 31];
  if (options.padding) output += '='.repeat((8 - (output.length % 8)) % 8);
  return output;
};

/**
 * Decodes base32 text. Case-insensitive and tolerant of spaces and trailing padding, because
 * secrets are sometimes typed or pasted by people; any other character is an error.
 * Non-zero trailing bits are rejected so that each byte string has exactly one accepted encoding.
 */
export const base32Decode = (text: string): Uint8Array => {
  const cleaned = text.replace(/\s+/g, '').toUpperCase().replace(/=+$/, '');
  if (IMPOSSIBLE_TAIL_LENGTHS.has(cleaned.length % 8)) throw new Base32Error('base32 text has an impossible length');
  const output = new Uint8Array(Math.floor((cleaned.length * 5) / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (const char of cleaned) {
    const value = DECODE_TABLE.get(char);
    if (value === undefined) throw new Base32Error('base32 text contains a character outside the RFC 4648 alphabet');
    buffer = (buffer << 5) | value;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      output[index++] = (buffer >>> bits) & 0xff;
      buffer &= (1 << bits) - 1;
    }
  }
  if (buffer !== 0) throw new Base32Error('base32 text has non-zero trailing bits');
  return output;
};
