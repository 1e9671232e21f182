import type { StoredEvent } from '../../domain/shared/event';
import { typeMatches } from '../../domain/shared/event';

export { isTypePattern, likeOfType, typeMatches } from '../../domain/shared/event';
import type { BoundStatement } from '../postgres/inline';

/** One SQL statement a projection wants executed; values are bound, never interpolated. */
export type Statement = BoundStatement;

export const sql = (text: string, ...values: unknown[]): Statement => ({ text, values });

/**
 * A read model: pure functions from events to SQL statements (DESIGN.md, Style).
 *
 * - tables: logical name → DDL builder. The builder receives the physical table name of a
 *   generation and returns the statements that create it with its indexes. Every table has a
 *   tenant_id column and every statement of evolve filters by it (mechanism 4).
 * - evolve receives the relation names to write to (the view rm.<table> for live inline writes,
 *   the generation table while rebuilding) and must be idempotent: applying an event twice leaves
 *   the rows as applying it once (guard updates with the stream version, insert with ON CONFLICT).
 * - mode inline runs in the append's transaction (read-your-writes); async runs in the projector
 *   with a checkpoint written in the same transaction as its rows.
 */
export interface Projection<T extends string = string> {
  name: string;
  version: number;
  mode: 'inline' | 'async';
  /** where the read model lives: PostgreSQL (the default) */
  target?: 'postgres';
  tables: Record<T, (physicalName: string) => string[]>;
  handles: readonly string[];
  evolve(event: StoredEvent<Record<string, unknown>>, tables: Record<T, string>): Statement[];
  /**
   * Optional: the statements for several events at once (in log order), leaving the rows exactly
   * as evolve applied to each in turn would, replays included, in fewer statements (one UPDATE …
   * FROM (VALUES …) for many rows). Used for inline writes of batched commands, catch-up and
   * rebuilds.
   */
  evolveMany?(events: StoredEvent<Record<string, unknown>>[], tables: Record<T, string>): Statement[];
}

/** a projection's statements for events it handles, in log order */
export const statementsFor = <T extends string>(
  p: Projection<T>,
  events: StoredEvent<Record<string, unknown>>[],
  tables: Record<T, string>,
): Statement[] => (p.evolveMany ? p.evolveMany(events, tables) : events.flatMap((e) => p.evolve(e, tables)));

/** What an analytics projection writes for a batch: rows per table, and the carried state of the keys it touched. */
export interface AnalyticsRows<T extends string, S> {
  rows: Partial<Record<T, object[]>>;
  state: ReadonlyMap<string, S>;
}

/**
 * A read model in ClickHouse (audit views): append-only rows, built by the projector from the same
 * global log, with generations and rebuilds like PostgreSQL read models (docs/kernel.md).
 *
 * - tables: logical name → ClickHouse DDL for a generation's physical table `<db>.<table>_g<N>`;
 *   readers query the view `<db>.<table>`. Rows must be safe to insert twice: a batch is inserted,
 *   then its checkpoint is committed in PostgreSQL, and a crash in between inserts the same rows
 *   again — use a ReplacingMergeTree keyed by the row's identity and read with FINAL or LIMIT 1 BY.
 * - handles: event types, or '*' for every event of the log.
 * - stateKey/rows: rows are a pure function of the events and of a small carried state per key (a
 *   tenant's running hash, a counter). The engine loads the state of the keys a batch touches and
 *   stores what rows returns in the same PostgreSQL transaction as the checkpoint, so a replayed
 *   batch starts from the same state and writes the very same rows.
 * - mode is async: ClickHouse cannot join a PostgreSQL transaction.
 */
export interface AnalyticsProjection<T extends string = string, S = unknown> {
  name: string;
  version: number;
  mode: 'async';
  target: 'clickhouse';
  tables: Record<T, (physicalName: string) => string[]>;
  handles: readonly string[];
  /** the key of the carried state the event's rows depend on; null when they depend on the event alone */
  stateKey?(event: StoredEvent<Record<string, unknown>>): string | null;
  rows(events: StoredEvent<Record<string, unknown>>[], state: ReadonlyMap<string, S>): AnalyticsRows<T, S>;
}

/** a PostgreSQL read model of any table set */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds projections of any table set
export type AnyProjection = Projection<any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds projections of any table set and state
export type AnyAnalyticsProjection = AnalyticsProjection<any, any>;
/** what a context registers: PostgreSQL read models and ClickHouse views alike */
export type RegisteredProjection = AnyProjection | AnyAnalyticsProjection;

export const isAnalytics = (p: RegisteredProjection): p is AnyAnalyticsProjection => p.target === 'clickhouse';

/** handles: '*' stands for every event type */
export const EVERY_EVENT = '*';

export const handlesType = (p: Pick<RegisteredProjection, 'handles'>, type: string): boolean =>
  p.handles.includes(EVERY_EVENT) || p.handles.some((h) => typeMatches(h, type));

/** rm.<table>: what readers query (a view onto the active generation). */
export const viewName = (table: string): string => `rm.${table}`;
export const generationTable = (table: string, generation: number): string => `rm.${table}_g${generation}`;

export const relationsFor = <T extends string>(
  projection: Projection<T>,
  generation: number | 'live',
): Record<T, string> =>
  Object.fromEntries(
    Object.keys(projection.tables).map((t) => [
      t,
      generation === 'live' ? viewName(t) : generationTable(t, generation),
    ]),
  ) as Record<T, string>;
