import { describe, expect, it } from 'vitest';
import { parseAmount } from '../../../domain/money/amount';
import { JsonNumber, RawJson, withMembers } from '../../../domain/shared/json';
import { stringifyJson } from '../../../infra/http/json';
import { DURATION_PATTERN, parseDuration } from '../../../domain/money/duration';
import { parseMoneyBody } from '../../../write-api/money/json-body';

const suffixOf = (fn: () => unknown) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return (e as { suffix?: string }).suffix ?? String(e);
  }
};

const amountOf = (text: string): unknown => (parseMoneyBody(text) as { amount: unknown }).amount;

describe('amounts', () => {
  it('accepts 1 and safe integers', () =>
    expect([parseAmount(1), parseAmount(9007199254740991)]).toEqual([1n, 9007199254740991n]));
  it.each([0, -1, 1.5, '100', null, undefined, true, {}, [], Number.NaN, 1e300])(
    'refuses %s with invalid-amount',
    (v) => expect(suffixOf(() => parseAmount(v))).toBe('invalid-amount'),
  );
  it('keeps 2^63 − 1 exact from the JSON text and refuses 2^63', () => {
    expect(amountOf('{"amount": 9223372036854775807}')).toBeInstanceOf(JsonNumber);
    expect(parseAmount(amountOf('{"amount": 9223372036854775807}'))).toBe(2n ** 63n - 1n);
    expect(suffixOf(() => parseAmount(amountOf('{"amount": 9223372036854775808}')))).toBe('invalid-amount');
    expect(suffixOf(() => parseAmount(amountOf('{"amount": 1e19}')))).toBe('invalid-amount');
  });
  // docs/decisions.md: an amount is a JSON integer written as plain digits
  it.each(['1e3', '1E3', '1.0', '100.00', '1e+2', '10e-1', '-0', '-5'])(
    'refuses the amount literal %s with invalid-amount',
    (literal) => {
      expect(suffixOf(() => parseAmount(amountOf(`{"currency": "USD", "amount": ${literal}}`)))).toBe('invalid-amount');
    },
  );
  it('reads the last amount of a body that names it twice, as JSON.parse does', () =>
    expect(parseAmount(amountOf('{"amount": 1.5, "amount": 7}'))).toBe(7n));
  it('leaves digits inside strings alone', () =>
    expect(parseMoneyBody('{"a":"12345678901234567890","b":"x\\"12345678901234567890"}')).toEqual({
      a: '12345678901234567890',
      b: 'x"12345678901234567890',
    }));
  it('keeps a __proto__ member as data, never as the prototype', () => {
    const body = parseMoneyBody('{"__proto__":{"x":1},"meta":{"__proto__":{"y":2}}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(Object.keys(body)).toEqual(['__proto__', 'meta']);
    expect((body as { x?: unknown }).x).toBeUndefined();
    expect((body.meta as { text: string }).text).toBe('{"__proto__":{"y":2}}');
  });
  it('refuses malformed JSON', () =>
    expect(() => parseMoneyBody('{"amount": 012345678901234567890}')).toThrow(SyntaxError));
});

describe('meta', () => {
  it('keeps the exact text of meta: big integers, number spellings, key order, escapes', () => {
    const text =
      '{"z": 123456789012345678901234567890, "2": 1.0, "1": [1e3, -0, 0.1000000000000000055511151231257827], "s": "a\\u00e9\\n", "n": {"k": null}}';
    const body = parseMoneyBody(`{"amount": 5, "meta": ${text}, "currency": "USD"}`) as { meta: RawJson };
    expect(body.meta).toBeInstanceOf(RawJson);
    expect(body.meta.text).toBe(text);
    expect(stringifyJson({ meta: body.meta, big: 2n ** 64n })).toBe(`{"meta":${text},"big":"18446744073709551616"}`);
  });
  it('leaves a meta that is not an object for the schema to refuse', () =>
    expect((parseMoneyBody('{"meta": [1]}') as { meta: unknown }).meta).toEqual([1]));
  it("adds members after the object's own text", () => {
    expect(withMembers('{ "a": 10000000000000000000001 }', { expired: true })).toBe(
      '{"a": 10000000000000000000001,"expired":true}',
    );
    expect(withMembers('{}', { expired: true })).toBe('{"expired":true}');
  });
});

describe('hold ttl durations', () => {
  it.each([
    ['72h', 72 * 3600_000],
    ['90m', 5_400_000],
    ['1h30m', 5_400_000],
    ['PT72H', 72 * 3600_000],
    ['P1DT1H', 25 * 3600_000],
    ['30s', 30_000],
  ])('%s', (text, ms) => expect(parseDuration(text)).toBe(ms));
  it.each(['', 'abc', '72', 'P', 'PT', '-1h', '1.5h'])('refuses %j', (text) => expect(parseDuration(text)).toBeNull());
  it.each([
    '72h',
    '90m',
    '1h30m',
    '1H30M',
    'PT72H',
    'pt72h',
    'P1DT1H',
    'P2D',
    '30s',
    '2d',
    '',
    'abc',
    '72',
    'P',
    'PT',
    'P1DT',
    '-1h',
    '1.5h',
    '1h ',
    'h',
  ])('the documented pattern reads %j as parseDuration does', (text) =>
    expect(new RegExp(DURATION_PATTERN).test(text)).toBe(parseDuration(text) !== null),
  );
});
