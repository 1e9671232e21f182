import { randomBytes } from 'node:crypto';
import { JsonNumber, RawJson } from '../../domain/shared/json';

// A private-use character plus a per-process nonce: a client's own string cannot look like a placeholder.
const TAG = `\u{e000}raw${randomBytes(6).toString('hex')}:`;
const PLACEHOLDER = new RegExp(`"${TAG}(\\d+)"`, 'g');

/**
 * JSON.stringify that writes bigints as decimal strings and RawJson values as their text. The
 * replacer sees each value after toJSON, so it looks the original up on its holder.
 */
export const stringifyJson = (value: unknown): string => {
  const raws: string[] = [];
  const text = JSON.stringify(value, function (this: Record<string, unknown>, key: string, v: unknown) {
    const original = this[key];
    if (original instanceof RawJson || original instanceof JsonNumber) return `${TAG}${raws.push(original.text) - 1}`;
    return typeof v === 'bigint' ? v.toString() : v;
  });
  return raws.length === 0 ? text : text.replace(PLACEHOLDER, (_match, i: string) => raws[Number(i)]!);
};
