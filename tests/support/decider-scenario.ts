import { expect } from 'vitest';
import type { Decider } from '../../domain/shared/decider';
import { fold } from '../../domain/shared/decider';
import { isDomainError } from '../../domain/shared/errors';

/**
 * The one given / when / then over a pure decider. The history is written as commands
 * (commandScenario: each decided on the state the earlier ones left, so fixtures are always
 * histories the decider allows) or as events (eventScenario: for a history the commands cannot
 * reach, or reads better as facts); either way `when` decides one command on the state it left, and
 *   then(events)            the decision is exactly these events
 *   then((events, after) => …)  checks the events and the state they lead to
 *   thenMatches(events)     the decision matches these (partial) events
 *   thenFails(suffix, status?)  the decision is refused with this problem
 */
const decisionOn =
  <S, C, E>(decider: Decider<S, C, E>, state: S) =>
  (command: C) => {
    const run = () => decider.decide(command, state);
    return {
      then: (expected: E[] | ((events: E[], after: S) => void)) => {
        const events = run();
        if (typeof expected === 'function') expected(events, fold(decider, events, state));
        else expect(events).toEqual(expected);
      },
      thenMatches: (expected: unknown[]) => expect(run()).toMatchObject(expected),
      thenFails: (suffix: string, status?: number) => {
        try {
          run();
        } catch (error) {
          if (!isDomainError(error)) throw error;
          expect(error.suffix).toBe(suffix);
          if (status !== undefined) expect(error.status).toBe(status);
          return;
        }
        throw new Error(`expected a refusal ${suffix}, got events`);
      },
    };
  };

/** given(...commands).when(command).then… */
export const commandScenario = <S, C, E>(decider: Decider<S, C, E>) => {
  /** the events of a history of commands */
  const history = (...commands: C[]): E[] => {
    const events: E[] = [];
    for (const command of commands) events.push(...decider.decide(command, fold(decider, events)));
    return events;
  };

  const given = (...commands: C[]) => {
    const state = fold(decider, history(...commands));
    return { state, when: decisionOn(decider, state) };
  };

  return { history, given };
};

/** given(...events).when(command).then… */
export const eventScenario =
  <S, C, E>(decider: Decider<S, C, E>) =>
  (...events: E[]) => {
    const state = fold(decider, events);
    return { state, when: decisionOn(decider, state) };
  };
