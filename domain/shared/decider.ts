/**
 * A decider is the pure core of an aggregate: it folds past events into state and turns a
 * command into new events. No I/O, no clock, no randomness: whatever a decision needs from
 * the outside world (now, new ids, lookups) arrives inside the command.
 */
export interface Decider<State, Command, Event> {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  /** Returns the events that record the decision; [] when the command is already done. Throws a DomainError to refuse. */
  decide: (command: Command, state: State) => Event[];
}

export const assertNever = (value: never): never => {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`);
};

export const fold = <S, E>(
  decider: Pick<Decider<S, unknown, E>, 'initialState' | 'evolve'>,
  events: readonly E[],
  from?: S,
): S => events.reduce(decider.evolve, from ?? decider.initialState());
