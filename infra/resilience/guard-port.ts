import type { Guard } from './guard';

/**
 * Puts every asynchronous method of an engine port behind a Guard (deadline, circuit breaker,
 * one retry of the idempotent ones, 502/503/504 as problems), leaving `ping` unguarded so that
 * health checks see the dependency as it is. Used for the engines beyond the process: S3, SMTP,
 * clamd (spec 000, gateway rules 1-4).
 */
export const guardPort = <T extends object>(
  port: T,
  guard: Guard,
  idempotent: ReadonlySet<string>,
  /** a method's own deadline (null: none), where the guard's would cut a legitimate call short */
  deadlines: Readonly<Record<string, number | null>> = {},
  /** methods that pass straight through, like ping: checks made at start, whose failure is reported where they run and must not open the circuit */
  unguarded: ReadonlySet<string> = new Set(),
): T =>
  new Proxy(port, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (
        typeof value !== 'function' ||
        property === 'ping' ||
        property === 'close' ||
        typeof property !== 'string' ||
        unguarded.has(property)
      )
        return value;
      const timeoutMs = Object.hasOwn(deadlines, property) ? deadlines[property] : undefined;
      return (...args: unknown[]) =>
        guard.run(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args), {
          idempotent: idempotent.has(property),
          timeoutMs,
        });
    },
  });
