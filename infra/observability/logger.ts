import pino from 'pino';

export type Logger = pino.Logger;

/** JSON logs on stdout; every request's lines carry its traceId (bound by the HTTP layer). */
export const createLogger = (options: { level?: string; name?: string } = {}): Logger =>
  pino({
    name: options.name ?? 'platform',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    base: { pid: process.pid },
    redact: { paths: ['req.headers.authorization', 'password', '*.password', 'refreshToken', '*.refreshToken'], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });

export const silentLogger = (): Logger => pino({ level: 'silent' });
