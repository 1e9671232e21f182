import { Writable } from 'node:stream';
import pino from 'pino';
import type { Logger } from '../../infra/observability/logger';

/** a logger whose lines the test can read */
export const captureLogger = (): { logger: Logger; lines: { level: number; msg: string; [k: string]: unknown }[] } => {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n'))
        if (line.trim()) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
};
