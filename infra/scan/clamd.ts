import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { ScanError, type VirusScanner } from './port';

export interface ClamdOptions {
  host: string;
  port: number;
  /** whole-call deadline: connect, send and verdict. A wedged clamd must not hold an upload forever. */
  timeoutMs?: number;
  /** bytes per INSTREAM chunk */
  chunkSize?: number;
}

/** a chunk of clamd's INSTREAM protocol: its length as 4 bytes big-endian, then the bytes; length 0 ends the stream */
const frame = (bytes: Buffer) => {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return [length, bytes];
};

async function* chunksOf(body: Buffer | Readable, size: number): AsyncGenerator<Buffer> {
  if (Buffer.isBuffer(body)) {
    for (let at = 0; at < body.length; at += size) yield body.subarray(at, at + size);
    return;
  }
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    for (let at = 0; at < buffer.length; at += size) yield buffer.subarray(at, at + size);
  }
}

/**
 * One clamd conversation: connect, send the command (and a body), read the NUL-terminated reply
 * (commands are sent with the 'z' prefix, so replies end in NUL), all under one deadline.
 */
const converse = (options: Required<ClamdOptions>, command: string, body?: Buffer | Readable): Promise<string> =>
  new Promise<string>((resolve, reject) => {
    const socket: Socket = connect({ host: options.host, port: options.port });
    const reply: Buffer[] = [];
    let settled = false;
    const finish = (error: Error | null, text?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      // A half-read body is of no use to anyone; release whatever it holds (file handle, upload).
      if (error && body !== undefined && !Buffer.isBuffer(body)) body.destroy();
      if (error) reject(error);
      else resolve(text ?? '');
    };
    const deadline = setTimeout(
      () =>
        finish(
          new ScanError(`clamd at ${options.host}:${options.port} gave no verdict within ${options.timeoutMs} ms`),
        ),
      options.timeoutMs,
    );
    const replyText = () =>
      Buffer.concat(reply)
        .toString('utf8')
        .replace(/\0[\s\S]*$/, '')
        .trim();

    socket.on('data', (data: Buffer) => {
      reply.push(data);
      if (data.includes(0)) finish(null, replyText());
    });
    // clamd closes the connection after answering, and also when it refuses a stream (size limit):
    // whatever it said before closing is the answer.
    socket.on('close', () =>
      reply.length > 0
        ? finish(null, replyText())
        : finish(new ScanError(`clamd at ${options.host}:${options.port} closed without an answer`)),
    );
    socket.on('error', (error) => {
      if (reply.length === 0)
        finish(new ScanError(`clamd at ${options.host}:${options.port}: ${error.message}`, { cause: error }));
    });

    const send = async () => {
      await once(socket, 'connect');
      socket.write(`z${command}\0`);
      if (body === undefined) return;
      for await (const chunk of chunksOf(body, options.chunkSize)) {
        if (settled) return; // clamd answered early (e.g. size limit) or the deadline passed
        for (const part of frame(chunk)) if (!socket.write(part)) await once(socket, 'drain');
      }
      socket.write(Buffer.alloc(4)); // zero-length chunk: end of stream
    };
    send().catch((error: Error) => {
      // A write failing after clamd already answered is expected; the reply handler settles that case.
      if (reply.length === 0)
        finish(error instanceof ScanError ? error : new ScanError(`scan aborted: ${error.message}`, { cause: error }));
    });
  });

export const createClamdScanner = (options: ClamdOptions): VirusScanner => {
  const settings: Required<ClamdOptions> = { timeoutMs: 30_000, chunkSize: 64 * 1024, ...options };
  return {
    async scan(body) {
      const answer = await converse(settings, 'INSTREAM', body);
      if (answer === 'stream: OK') return { clean: true };
      const found = /^stream: (.+) FOUND$/.exec(answer);
      if (found) return { clean: false, signature: found[1]! };
      // too large for clamd's StreamMaxLength: an answer about these bytes (not clean), not a failure of clamd
      if (/size limit exceeded/i.test(answer)) return { clean: false, unscannable: answer };
      // any other ERROR: no verdict, so the file is not clean either.
      throw new ScanError(`clamd gave no verdict: ${answer || '(empty answer)'}`);
    },
    async ping() {
      const answer = await converse({ ...settings, timeoutMs: Math.min(settings.timeoutMs, 5_000) }, 'PING');
      if (answer !== 'PONG') throw new ScanError(`clamd answered PING with ${JSON.stringify(answer)}`);
    },
  };
};
