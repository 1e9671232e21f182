import type { Decider } from '../../domain/shared/decider';
import type { NewEvent } from '../../domain/shared/event';

/**
 * How the kernel stores one kind of aggregate: its decider, and the shape version of the state it
 * keeps beside the stream. Bump stateSchema whenever State changes shape: stored states of the old
 * shape are then ignored and rebuilt from the events once.
 */
export interface AggregateType<S, C, E extends NewEvent> {
  name: string;
  decider: Decider<S, C, E>;
  stateSchema: string;
  /** JSON form of the state (bigints, Maps, Dates need one); identity by default */
  encode?: (state: S) => unknown;
  decode?: (json: unknown) => S;
  /** turns a stored payload back into the decider's event type (parse with the zod schema) */
  toEvent?: (stored: { type: string; data: Record<string, unknown> }) => E;
}

export const defineAggregate = <S, C, E extends NewEvent>(a: AggregateType<S, C, E>): AggregateType<S, C, E> => a;
