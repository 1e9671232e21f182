/**
 * The one polling loop behind the services' `eventually` helpers (tests/support/{audit,billing-http,
 * events,files,notify}.ts keep their own signatures as thin adapters): calls check until accept
 * holds for its value and answers that value; past the deadline it fails, naming what was awaited
 * and the last value seen.
 */
export const pollUntil = async <T>(
  check: () => Promise<T>,
  accept: (value: T) => boolean,
  options: { timeoutMs: number; everyMs?: number; what?: string },
): Promise<T> => {
  const { timeoutMs, everyMs = 50, what = 'the condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms; last: ${describe(value)}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
};

const describe = (value: unknown): string => {
  try {
    return (JSON.stringify(value) ?? String(value)).slice(0, 2_000);
  } catch {
    return String(value);
  }
};
