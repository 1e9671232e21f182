/**
 * Audit views live in ClickHouse. One port, two adapters that share every line of query code:
 * both are an `@clickhouse/client` — over HTTP to a server in production, over chdb's in-process
 * engine (`chdb/connection`) for `npm start` and tests — so what passes embedded passes in production.
 */
export interface AnalyticsStore {
  readonly kind: 'http' | 'embedded';
  /** the database every table of the platform lives in; SQL names tables as `${database}.<table>` */
  readonly database: string;
  /** DDL and other statements without a result */
  command(sql: string): Promise<void>;
  /** rows as JSON objects (JSONEachRow); 64-bit integers must be given as strings or bigint-free numbers */
  insert(table: string, rows: object[]): Promise<void>;
  /**
   * Rows a bulk writer has encoded itself: one JSON array per line, members in the order of
   * `columns` (JSONCompactEachRow), in one statement. Embedded, the text goes to the engine as
   * bytes, not through the SQL parser; no per-row objects are built or encoded again.
   */
  insertLines(table: string, columns: readonly string[], lines: string): Promise<void>;
  /**
   * Reads rows. Values travel as ClickHouse query parameters, written `{name:Type}` in the SQL,
   * never spliced into the text. 64-bit integers come back as strings (no precision loss).
   */
  query<T>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /** throws when the engine cannot be reached */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** database and table names are spliced into SQL: only plain identifiers */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `<database>.<table>` for a table of the platform's database */
export const tableOf = (store: Pick<AnalyticsStore, 'database'>, table: string): string => {
  if (!IDENTIFIER.test(table)) throw new Error(`invalid table name: ${table}`);
  return `${store.database}.${table}`;
};

/** ISO 8601 (or a Date) → the text ClickHouse binds to DateTime64(3) */
export const chTime = (t: Date | string): string => new Date(t).toISOString().replace('T', ' ').replace('Z', '');
