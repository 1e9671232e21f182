import type { StoredEvent } from '../../domain/shared/event';
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
export const statementsFor = <T extends string>(p: Projection<T>, events: StoredEvent<Record<string, unknown>>[], tables: Record<T, string>): Statement[] =>
  (p.evolveMany ? p.evolveMany(events, tables) : events.flatMap((e) => p.evolve(e, tables)));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds projections of any table set
export type AnyProjection = Projection<any>;

/** rm.<table>: what readers query (a view onto the active generation). */
export const viewName = (table: string): string => `rm.${table}`;
export const generationTable = (table: string, generation: number): string => `rm.${table}_g${generation}`;

export const relationsFor = <T extends string>(projection: Projection<T>, generation: number | 'live'): Record<T, string> =>
  Object.fromEntries(
    Object.keys(projection.tables).map((t) => [t, generation === 'live' ? viewName(t) : generationTable(t, generation)]),
  ) as Record<T, string>;
