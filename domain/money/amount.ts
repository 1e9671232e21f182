import { z } from 'zod';
import { moneyErrors } from './errors';

/** Amounts are integer cents in PostgreSQL bigint: 1 … 2^63 − 1. */
export const MAX_AMOUNT = 2n ** 63n - 1n;

/**
 * An integer literal of a JSON body beyond Number.MAX_SAFE_INTEGER, kept exactly (JSON.parse would
 * round it). Made only by the money routes' body parser, so a client cannot forge one with an
 * object; it serializes to a tagged string for request hashing.
 */
export class JsonBigInt {
  constructor(readonly digits: string) {}
  toJSON(): string {
    return `bigint:${this.digits}`;
  }
}

/**
 * The amount of a request: a JSON integer of at least 1 (exact up to 2^63 − 1). Zero, negative,
 * fractional, strings, other types and values beyond the range are refused with invalid-amount.
 */
export const parseAmount = (value: unknown): bigint => {
  let amount: bigint;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw moneyErrors.invalidAmount();
    amount = BigInt(value);
  } else if (value instanceof JsonBigInt) {
    amount = BigInt(value.digits);
  } else {
    throw moneyErrors.invalidAmount(value === undefined ? 'amount is required: an integer number of cents from 1 to 9223372036854775807.' : undefined);
  }
  if (amount < 1n || amount > MAX_AMOUNT) throw moneyErrors.invalidAmount();
  return amount;
};

/** amounts inside events and stored states: decimal strings in JSON, bigint in memory */
export const Cents = z.union([z.bigint(), z.string().regex(/^-?\d+$/)]).transform((v) => BigInt(v));

export const Balance = z.object({ available: Cents, pending: Cents, frozen: Cents });
export type Balance = z.infer<typeof Balance>;
export const zeroBalance = (): Balance => ({ available: 0n, pending: 0n, frozen: 0n });
