import type { Readable } from 'node:stream';

/**
 * Virus scanning of uploaded files, by clamd. There is no embedded scanner: when clamd is not
 * configured, the files context decides what an unscanned file may do.
 */
export type ScanVerdict =
  | { clean: true }
  | { clean: false; signature: string }
  /** clamd answered but gave no verdict on these bytes (over its StreamMaxLength): never clean, and asking again will not help */
  | { clean: false; unscannable: string };

export interface VirusScanner {
  /** consumes the body to its end; rejects (ScanError) when no verdict was reached in time */
  scan(body: Buffer | Readable): Promise<ScanVerdict>;
  /** throws when the scanner cannot be reached */
  ping(): Promise<void>;
}

export class ScanError extends Error {
  readonly code = 'scan-failed';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScanError';
  }
}
