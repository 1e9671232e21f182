import type { VirusScanner } from './port';
import { createClamdScanner } from './clamd';

export type { ScanVerdict, VirusScanner } from './port';
export { ScanError } from './port';

/** clamd when CLAMD_HOST is configured; none otherwise (the caller decides what unscanned files may do). */
export const createVirusScanner = (config: { clamdHost?: string; clamdPort?: number }): VirusScanner | null =>
  config.clamdHost ? createClamdScanner({ host: config.clamdHost, port: config.clamdPort ?? 3310 }) : null;
