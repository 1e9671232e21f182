import { isDomainError } from '../../domain/shared/errors';
import type { Logger } from '../observability/logger';

/**
 * What a platform process does with an error that reached its top level — an uncaught exception
 * or a promise rejected with no handler — instead of node's default (print and exit at once, every
 * tenant's requests cut off). DESIGN.md mechanism 11: no request, however malformed, ends the
 * process. The rule (docs/decisions.md):
 *
 * - Contained — logged with its context, the process keeps serving: a rejected promise nobody
 *   awaited (one operation failed; no code was unwound half-way), an 'error' event of a stream or
 *   socket that had no listener (that emitter is finished, nothing else is), the failure of one
 *   I/O operation (a system error code such as EPIPE or ECONNRESET, a stream, HTTP-parser, TLS,
 *   WebSocket or zlib error code), or a refusal from an error catalog (a DomainError: one
 *   request's input, thrown outside its request).
 * - Fatal — anything else thrown synchronously out of a callback (a TypeError, a failed
 *   assertion): code stopped half-way through changing state nobody can vouch for. Logged at
 *   fatal, then the process stops the way SIGTERM stops it (in-flight requests drained, workers
 *   stopped, engines closed) and exits with status 1 for its supervisor to restart it.
 */
export type ProcessFault = 'uncaughtException' | 'unhandledRejection';

export interface Verdict {
  keepServing: boolean;
  /** why, in a few words: it goes into the log line */
  reason: string;
}

/** node's error codes for the failure of one I/O operation, one stream or one socket */
const IO_CODE =
  /^(E[A-Z0-9]+|ERR_STREAM_\w+|ERR_HTTP_\w+|ERR_SOCKET_\w+|ERR_TLS_\w+|ERR_SSL_\w+|HPE_\w+|ABORT_ERR|ERR_UNHANDLED_ERROR|WS_ERR_\w+|Z_\w+|ERR_INVALID_HTTP_RESPONSE)$/;

/**
 * Node marks an error it throws because an emitter emitted 'error' with no listener (events.js
 * attaches this symbol to add "Emitted 'error' event on … instance at:" to the printed stack; it
 * has since node 12). Read by its description: it is not exported.
 */
const errorEventMark = (error: unknown): symbol | undefined =>
  error instanceof Error
    ? Object.getOwnPropertySymbols(error).find((s) => s.description === 'kEnhanceStackBeforeInspector')
    : undefined;

/** the class of the emitter that emitted an unheard 'error' event (FileStream, Socket, Client …) */
const emitterOf = (error: unknown): string | undefined => {
  const mark = errorEventMark(error);
  if (!mark) return undefined;
  try {
    const enhance = (error as Error & Record<symbol, unknown>)[mark];
    const stack = typeof enhance === 'function' ? String((enhance as () => unknown)()) : '';
    return /Emitted 'error' event on (\S+) instance/.exec(stack)?.[1] ?? 'EventEmitter';
  } catch {
    return 'EventEmitter';
  }
};

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** the rule above, as a pure function of the error and how it arrived */
export const judge = (error: unknown, fault: ProcessFault): Verdict => {
  if (fault === 'unhandledRejection')
    return { keepServing: true, reason: 'a promise rejected with no handler: one operation failed' };
  if (errorEventMark(error))
    return { keepServing: true, reason: "an 'error' event of one stream or socket had no listener" };
  const code = codeOf(error);
  if (code !== undefined && IO_CODE.test(code))
    return { keepServing: true, reason: `the failure of one I/O operation (${code})` };
  if (isDomainError(error))
    return { keepServing: true, reason: "a refusal of one request's input, thrown outside its request" };
  return { keepServing: false, reason: 'thrown out of a callback by code whose state is now unknown' };
};

/** contained errors logged in full per minute; beyond, they are counted and the count logged once a minute */
const LOGGED_PER_MINUTE = 20;

export interface ProcessPolicyOptions {
  logger: Logger;
  /** fields every line of the policy carries (the role) */
  context?: Record<string, unknown>;
  /** a fatal error: stop the process (drain, stop workers, close engines) and exit with status 1 */
  onFatal: (error: unknown) => void;
  now?: () => number;
}

/**
 * Installs the rule for this process (once per process: a composition root calls it, never a
 * library). Returns a function that removes it again.
 */
export const installProcessPolicy = (options: ProcessPolicyOptions): (() => void) => {
  const { logger, context = {}, onFatal } = options;
  const now = options.now ?? Date.now;
  let windowStart = now();
  let loggedInWindow = 0;
  let suppressed = 0;
  let fatal = false;

  const handle = (error: unknown, fault: ProcessFault) => {
    const verdict = judge(error, fault);
    const fields = {
      ...context,
      err: error,
      fault,
      reason: verdict.reason,
      ...(emitterOf(error) ? { emitter: emitterOf(error) } : {}),
      code: codeOf(error),
      uptimeSec: Math.round(process.uptime()),
    };
    if (!verdict.keepServing) {
      logger.fatal(
        fields,
        fatal
          ? 'another fatal error while stopping'
          : 'an error left the process in an unknown state: draining requests, stopping, exiting with status 1',
      );
      logger.flush?.();
      if (!fatal) {
        fatal = true;
        onFatal(error);
      }
      return;
    }
    const t = now();
    if (t - windowStart >= 60_000) {
      if (suppressed > 0)
        logger.error({ ...context, suppressed }, 'contained errors not logged one by one in the last minute');
      windowStart = t;
      loggedInWindow = 0;
      suppressed = 0;
    }
    if (loggedInWindow >= LOGGED_PER_MINUTE) {
      suppressed += 1;
      return;
    }
    loggedInWindow += 1;
    logger.error(fields, 'an error reached the process: contained, still serving');
  };

  // a failure of the policy itself (a logger that throws) must not become node's exit code 7
  const guarded = (error: unknown, fault: ProcessFault) => {
    try {
      handle(error, fault);
    } catch (failure) {
      process.stderr.write(`process policy: ${String(failure)} while handling ${fault}: ${String(error)}\n`);
    }
  };
  const onException = (error: unknown) => guarded(error, 'uncaughtException');
  const onRejection = (reason: unknown) => guarded(reason, 'unhandledRejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
};
