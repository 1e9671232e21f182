import { JsonNumber, RawJson } from '../shared/json';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** a stored amount (decimal string, or bigint in memory) as a JSON integer written digit for digit */
const integer = (v: unknown): unknown =>
  typeof v === 'bigint' || (typeof v === 'string' && /^-?\d+$/.test(v)) ? new JsonNumber(String(v)) : v;

/**
 * A money event's payload as it travels on platform.money.events (spec 002, Event; DESIGN.md
 * mechanism 5): amounts — the movement's, each ledger entry's, the balance after — are JSON
 * integers of minor units (the event store keeps them as decimal strings: JSON has no bigint), and
 * meta is the client's object as it sent it (the store keeps its text).
 */
export const moneyWirePayload = (data: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...data };
  if ('amount' in out) out.amount = integer(out.amount);
  const balance = out.balanceAfter;
  if (isObject(balance))
    out.balanceAfter = Object.fromEntries(Object.entries(balance).map(([k, v]) => [k, integer(v)]));
  if (Array.isArray(out.entries))
    out.entries = out.entries.map((e: unknown) => (isObject(e) ? { ...e, amount: integer(e.amount) } : e));
  if (typeof out.meta === 'string' && out.meta.trim().startsWith('{')) out.meta = new RawJson(out.meta);
  return out;
};
