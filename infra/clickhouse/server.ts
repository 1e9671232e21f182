import { createServer, type IncomingMessage } from 'node:http';
import { mkdir } from 'node:fs/promises';

/**
 * The chdb engine (ClickHouse compiled as a library, the engine of the embedded default) served over
 * ClickHouse's HTTP interface, so processes that cannot open the data folder themselves share it
 * through CLICKHOUSE_URL like a ClickHouse server: libchdb binds its data folder to one process.
 * The cluster primary of `platform start` serves its folder to its HTTP workers this way
 * (infra/cluster/primary.ts), and the split test run serves one to its role processes
 * (tests/support/clickhouse-server.ts).
 *
 * The part of the HTTP interface @clickhouse/client uses: POST / with the statement in the body, or
 * in `query` with the data (an INSERT's rows) in the body; `param_<name>` values bound by the
 * engine as ClickHouse binds them (text parsed by the placeholder's type); other URL parameters are
 * settings; GET /ping. Errors answer 500 with ClickHouse's message and X-ClickHouse-Exception-Code.
 * Loopback only: it has no authentication.
 */
export interface ClickHouseServer {
  /** http://127.0.0.1:<port> */
  url: string;
  close(): Promise<void>;
}

/** URL parameters of the HTTP interface that are not settings */
const NOT_SETTINGS = new Set([
  'query',
  'query_id',
  'database',
  'session_id',
  'default_format',
  'role',
  'user',
  'password',
  'wait_end_of_query',
  'send_progress_in_http_headers',
  'enable_http_compression',
  'http_zlib_compression_level',
  'http_headers_progress_interval_ms',
]);

const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const settingsOf = (params: URLSearchParams): string[] =>
  [...params]
    .filter(([key]) => !NOT_SETTINGS.has(key) && !key.startsWith('param_') && /^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
    .map(([key, value]) => `SET ${key} = ${/^-?\d+(\.\d+)?$/.test(value) ? value : `'${value.replace(/'/g, "''")}'`}`);

/**
 * Serves the chdb data folder `folder` on 127.0.0.1:port (0: a free port). A process that also
 * opens the folder as its own embedded store (infra/clickhouse/embedded.ts) shares the engine:
 * libchdb allows several connections to the one folder of a process.
 */
export const startClickHouseServer = async (options: { folder: string; port?: number }): Promise<ClickHouseServer> => {
  await mkdir(options.folder, { recursive: true });
  // loaded only where served: a process on a ClickHouse server never loads the native library
  const { Session } = await import('chdb');
  const session = new Session(options.folder);

  // one statement at a time: the session holds settings (SET …) for the statement that follows
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };

  // query parameters (param_ids of a consumer batch) make long URLs: ClickHouse accepts 1 MiB (http_max_uri_size)
  const server = createServer({ maxHeaderSize: 1024 * 1024 }, (request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://clickhouse');
      if (url.pathname === '/ping') {
        response.end('Ok.\n');
        return;
      }
      const body = await readBody(request);
      const inUrl = url.searchParams.get('query');
      const statement = inUrl ? (body ? `${inUrl}\n${body}` : inUrl) : body;
      const params = Object.fromEntries(
        [...url.searchParams].filter(([key]) => key.startsWith('param_')).map(([key, value]) => [key.slice(6), value]),
      );
      const settings = settingsOf(url.searchParams);
      try {
        const result = await serially(async () => {
          for (const set of settings) await session.queryAsync(set);
          return Object.keys(params).length ? session.queryBindAsync(statement, params) : session.queryAsync(statement);
        });
        response.writeHead(200, {
          'Content-Type': 'text/plain; charset=UTF-8',
          'X-ClickHouse-Query-Id': url.searchParams.get('query_id') ?? '',
        });
        response.end(Buffer.from(result.bytes()));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const code = /Code: (\d+)/.exec(message)?.[1] ?? '1001';
        response.writeHead(500, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': code });
        response.end(message.startsWith('Code:') ? message : `Code: ${code}. DB::Exception: ${message}`);
      }
    })();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await queue;
      session.cleanup?.();
    },
  };
};
