/** The slice of pino the log adapters write to; a pino logger (or child) fits as is. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Without a logger only warnings and errors reach stderr: a failing consumer must never be silent. */
export const stderrLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (obj, msg) => console.warn(msg ?? '', obj),
  error: (obj, msg) => console.error(msg ?? '', obj),
};
