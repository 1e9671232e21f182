import pg from 'pg';

// bigint columns (positions, amounts, xid8) arrive as strings; callers convert where they need numbers.
export type Db = pg.Pool;
export type Tx = pg.PoolClient;
/** Anything that can run a query: the pool or a transaction's client. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export const createPool = (
  connectionString: string,
  options: { max?: number; applicationName?: string; waitMs?: number } = {},
): Db => {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 20,
    application_name: options.applicationName ?? 'platform',
    idleTimeoutMillis: 30_000,
    // how long a query waits for a free connection before failing (answered as 503, never 500)
    connectionTimeoutMillis: options.waitMs ?? 5_000,
  });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor one checked out (a transaction, a worker's session) when its backend is terminated (a
  // server restart, pg_terminate_backend): pg fails its queries with the error, which is what the
  // holder sees, and then emits it as an event the pool no longer listens to while the client is
  // out — without a listener of its own, that event would end the process.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
};

/**
 * A connection of its own beside the pool, on the pool's settings, for a holder that keeps it for
 * its whole life (a leader lock, a worker session, a log group member): taken from the pool it
 * would starve every request and worker of the process. `role` names it in pg_stat_activity
 * (<application>/<role>). The caller connects it and listens to its errors.
 */
export const sessionClient = (pool: Db, role: string): pg.Client =>
  new pg.Client({
    ...pool.options,
    application_name: `${pool.options.application_name ?? 'platform'}/${role}`.slice(0, 63),
    keepAlive: pool.options.keepAlive ?? true,
  });

export type Isolation = 'read committed' | 'repeatable read' | 'serializable';

/**
 * Runs fn in a transaction on one client; commits when it resolves, rolls back when it throws.
 * `savepoint` names a savepoint set in the same round trip as BEGIN, for callers that retry
 * from it.
 */
export const inTransaction = async <T>(
  db: Db,
  fn: (tx: Tx) => Promise<T>,
  options: { isolation?: Isolation; savepoint?: string } = {},
): Promise<T> => {
  const client = await db.connect();
  const isolation = options.isolation ?? 'read committed';
  try {
    const begin = isolation === 'read committed' ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`;
    await client.query(options.savepoint ? `${begin}; SAVEPOINT ${options.savepoint}` : begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};

/** pg's error when no pooled connection became free within connectionTimeoutMillis */
export const isPoolTimeout = (error: unknown): boolean =>
  error instanceof Error && /^timeout exceeded when trying to connect$/i.test(error.message);

/** Postgres error codes the kernel reacts to. */
export const PgCode = {
  uniqueViolation: '23505',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  lockNotAvailable: '55P03',
} as const;

export const pgErrorCode = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
