import { expect } from 'vitest';
import type { Decider } from '../../domain/shared/decider';
import { fold } from '../../domain/shared/decider';
import { isDomainError } from '../../domain/shared/errors';

/**
 * Given / when / then over a pure decider whose history is written as commands: each command is
 * decided on the state the earlier ones left, so fixtures are always histories the decider allows.
 */
export const commandScenario = <S, C, E>(decider: Decider<S, C, E>) => {
  /** the events of a history of commands */
  const history = (...commands: C[]): E[] => {
    const events: E[] = [];
    for (const command of commands) events.push(...decider.decide(command, fold(decider, events)));
    return events;
  };

  const given = (...commands: C[]) => {
    const state = fold(decider, history(...commands));
    return {
      state,
      when: (command: C) => {
        const run = () => decider.decide(command, state);
        return {
          then: (check: (events: E[], after: S) => void) => {
            const events = run();
            check(events, fold(decider, events, state));
          },
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
      },
    };
  };

  return { history, given };
};
