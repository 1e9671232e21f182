import { z } from 'zod';
import { JsonNumber } from '../shared/json';
import { moneyErrors } from './errors';

/** Amounts are integer cents in PostgreSQL bigint: 1 … 2^63 − 1. */
export const MAX_AMOUNT = 2n ** 63n - 1n;

/** a JSON integer written as plain digits: no sign, fraction, exponent or leading zero */
const PLAIN_DIGITS = /^(0|[1-9]\d*)$/;

/**
 * The amount of a request: a JSON integer of at least 1 written as plain digits (exact up to
 * 2^63 − 1; the money body parser hands it over as the literal's text). Zero, negatives,
 * fractions, other spellings of an integer (1e3, 1.0, 100.00), strings, other types and values
 * beyond the range are refused with invalid-amount.
 */
export const parseAmount = (value: unknown): bigint => {
  let amount: bigint;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw moneyErrors.invalidAmount();
    amount = BigInt(value);
  } else if (value instanceof JsonNumber) {
    if (!PLAIN_DIGITS.test(value.text)) throw moneyErrors.invalidAmount();
    amount = BigInt(value.text);
  } else {
    throw moneyErrors.invalidAmount(
      value === undefined ? 'amount is required: an integer number of cents from 1 to 9223372036854775807.' : undefined,
    );
  }
  if (amount < 1n || amount > MAX_AMOUNT) throw moneyErrors.invalidAmount();
  return amount;
};

/**
 * amounts inside events and stored states: decimal strings in JSON, bigint in memory; JSON integers
 * as the log carries them (an event replayed from platform.money.events, domain/money/wire.ts)
 */
export const Cents = z.union([z.bigint(), z.string().regex(/^-?\d+$/), z.number().int()]).transform((v) => BigInt(v));

export const Balance = z.object({ available: Cents, pending: Cents, frozen: Cents });
export type Balance = z.infer<typeof Balance>;
export const zeroBalance = (): Balance => ({ available: 0n, pending: 0n, frozen: 0n });
