/**
 * Errors that reached this process's top level while a suite ran — an uncaught exception (an
 * 'error' event nobody listened to, a throw from a callback) or a promise rejected with no handler
 * — for the suites that check nothing a request does gets there (DESIGN.md mechanism 11). In the
 * all-in-one run the platform serves from the test process, so its escapes land here; vitest's
 * own handlers still see them too.
 */
export const watchProcessErrors = () => {
  const seen: string[] = [];
  const onException = (error: unknown) => seen.push(`uncaught exception: ${describe(error)}`);
  const onRejection = (reason: unknown) => seen.push(`unhandled rejection: ${describe(reason)}`);
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return {
    errors: (): string[] => [...seen],
    stop: () => {
      process.off('uncaughtException', onException);
      process.off('unhandledRejection', onRejection);
    },
  };
};

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);
