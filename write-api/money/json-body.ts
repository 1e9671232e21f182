import { randomBytes } from 'node:crypto';
import { JsonBigInt } from '../../domain/money/amount';

const INTEGER = /^-?(0|[1-9]\d*)$/;
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/**
 * JSON.parse that keeps integer literals beyond Number.MAX_SAFE_INTEGER exact (as JsonBigInt)
 * instead of rounding them, so that an amount up to 2^63 − 1 arrives as written. Strings are
 * skipped while scanning, so digits inside them are never touched. __proto__ keys are refused
 * (what Fastify's own parser does).
 */
export const parseJsonExact = (text: string): unknown => {
  if (text.includes('__proto__')) {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__') throw new SyntaxError('a __proto__ key is not allowed');
      return value;
    });
  }
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  const tag = `\u{e000}${randomBytes(6).toString('hex')}:`;
  let out = '';
  let last = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
      continue;
    }
    if (c === '-' || isDigit(c)) {
      let j = i + 1;
      while (isDigit(text[j])) j += 1;
      const literal = text.slice(i, j);
      if (text[j] === '.' || text[j] === 'e' || text[j] === 'E') {
        while (j < text.length && /[\d.eE+-]/.test(text[j]!)) j += 1;
      } else if (INTEGER.test(literal) && !Number.isSafeInteger(Number(literal))) {
        out += `${text.slice(last, i)}"${tag}${literal}"`;
        last = j;
      }
      i = j;
      continue;
    }
    i += 1;
  }
  out += text.slice(last);
  return JSON.parse(out, (_key, value: unknown) => (typeof value === 'string' && value.startsWith(tag) ? new JsonBigInt(value.slice(tag.length)) : value));
};
