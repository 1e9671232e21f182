import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino from 'pino';

export type Logger = pino.Logger;

/** the fields pino writes on every line itself */
const LINE_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);

const boundKeys = new WeakMap<object, { bindings: string; keys: Set<string> }>();

/** the keys a logger (or child) writes on each line: pino's own and its bindings */
const keysOf = (logger: Logger): Set<string> => {
  const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  const cached = boundKeys.get(logger);
  if (cached?.bindings === bindings) return cached.keys;
  const keys = new Set([...LINE_KEYS, ...Object.keys(logger.bindings())]);
  boundKeys.set(logger, { bindings, keys });
  return keys;
};

/**
 * pino writes a logged object's fields after the line's own and the bindings' without merging, so
 * a field named like one of them (`name`, a child's `traceId`) would appear twice in one JSON line;
 * JSON readers then keep one of the two at random. Such a field is renamed <key>Field instead
 * (or dropped when it repeats a binding's value exactly).
 */
function uniqueKeys(this: Logger, args: Parameters<pino.LogFn>, method: pino.LogFn): void {
  const [first] = args;
  if (first && typeof first === 'object' && !(first instanceof Error)) {
    const taken = keysOf(this);
    // an object's msg is the line's message unless a message string follows it
    const collides = (key: string) => taken.has(key) && (key !== 'msg' || args.length > 1);
    const bindings = Object.keys(first).some(collides) ? this.bindings() : null;
    if (bindings) {
      const fields: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(first)) {
        if (!collides(key)) fields[key] = value;
        else if (!(key in bindings && bindings[key] === value)) fields[`${key}Field`] = value;
      }
      (args as unknown[])[0] = fields;
    }
  }
  method.apply(this, args);
}

/**
 * The trace a line was written in, as exported: its span, and its trace id unless the logger binds
 * one already (a request's lines carry the request's traceId, which is its server span's).
 */
const traceOfLine = (_fields: object, _level: number, logger: Logger): object => {
  const span = trace.getActiveSpan()?.spanContext();
  if (!span || !isSpanContextValid(span)) return {};
  return keysOf(logger).has('traceId') ? { spanId: span.spanId } : { traceId: span.traceId, spanId: span.spanId };
};

/** JSON logs on stdout; every line written inside a traced operation names its trace and span. */
export const createLogger = (
  options: { level?: string; name?: string; destination?: pino.DestinationStream } = {},
): Logger => {
  const settings: pino.LoggerOptions = {
    name: options.name ?? 'platform',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    base: { pid: process.pid },
    redact: {
      paths: ['req.headers.authorization', 'password', '*.password', 'refreshToken', '*.refreshToken'],
      censor: '[redacted]',
    },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { logMethod: uniqueKeys },
    mixin: traceOfLine,
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
};

export const silentLogger = (): Logger => pino({ level: 'silent' });
