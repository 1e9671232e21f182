import { describe, expect, it } from 'vitest';
import { JsonBigInt, parseAmount } from '../../../domain/money/amount';
import { parseDuration } from '../../../domain/money/duration';
import { parseJsonExact } from '../../../write-api/money/json-body';

const suffixOf = (fn: () => unknown) => { try { fn(); return 'ok'; } catch (e) { return (e as { suffix?: string }).suffix ?? String(e); } };

describe('amounts', () => {
  it('accepts 1 and safe integers', () => expect([parseAmount(1), parseAmount(9007199254740991)]).toEqual([1n, 9007199254740991n]));
  it.each([0, -1, 1.5, '100', null, undefined, true, {}, [], Number.NaN, 1e300])('refuses %s with invalid-amount', (v) => expect(suffixOf(() => parseAmount(v))).toBe('invalid-amount'));
  it('keeps 2^63 − 1 exact from the JSON text and refuses 2^63', () => {
    const max = parseJsonExact('{"amount": 9223372036854775807}') as { amount: unknown };
    expect(max.amount).toBeInstanceOf(JsonBigInt);
    expect(parseAmount(max.amount)).toBe(2n ** 63n - 1n);
    expect(suffixOf(() => parseAmount((parseJsonExact('{"amount": 9223372036854775808}') as { amount: unknown }).amount))).toBe('invalid-amount');
    expect(suffixOf(() => parseAmount((parseJsonExact('{"amount": 1e19}') as { amount: unknown }).amount))).toBe('invalid-amount');
  });
  it('leaves digits inside strings alone', () => expect(parseJsonExact('{"a":"12345678901234567890","b":"x\\"12345678901234567890"}')).toEqual({ a: '12345678901234567890', b: 'x"12345678901234567890' }));
  it('refuses __proto__ keys', () => expect(() => parseJsonExact('{"__proto__":{"x":1}}')).toThrow(SyntaxError));
  it('refuses malformed JSON', () => expect(() => parseJsonExact('{"amount": 012345678901234567890}')).toThrow(SyntaxError));
});

describe('hold ttl durations', () => {
  it.each([['72h', 72 * 3600_000], ['90m', 5_400_000], ['1h30m', 5_400_000], ['PT72H', 72 * 3600_000], ['P1DT1H', 25 * 3600_000], ['30s', 30_000]])('%s', (text, ms) => expect(parseDuration(text)).toBe(ms));
  it.each(['', 'abc', '72', 'P', 'PT', '-1h', '1.5h'])('refuses %j', (text) => expect(parseDuration(text)).toBeNull());
});
