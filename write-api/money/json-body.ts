import { JsonNumber, objectMembers, RawJson } from '../../domain/shared/json';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The body of a money request: JSON.parse's meaning for everything except two top-level members,
 * which keep the exact text the client wrote (docs/decisions.md):
 * - `amount`, when it is a number, becomes a JsonNumber (its literal: `100`, `1e3`, `1.0` or
 *   `9223372036854775807`), so that parseAmount accepts plain digits only and no integer beyond
 *   2^53 − 1 is rounded;
 * - `meta`, when it is an object, becomes a RawJson (its text, stored and answered as sent).
 * A member named __proto__ is data, as everywhere (infra/http/host.ts): JSON.parse makes it an own property.
 */
export const parseMoneyBody = (text: string): unknown => {
  const value: unknown = JSON.parse(text);
  if (!isPlainObject(value) || !('amount' in value || 'meta' in value)) return value;
  const members = objectMembers(text);
  const amount = members?.get('amount');
  if (amount !== undefined && typeof value.amount === 'number') value.amount = new JsonNumber(amount);
  const meta = members?.get('meta');
  if (meta !== undefined && isPlainObject(value.meta)) value.meta = new RawJson(meta, value.meta);
  return value;
};
