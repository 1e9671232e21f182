import { expect } from 'vitest';
import type { Decider } from '../../../domain/shared/decider';
import { fold } from '../../../domain/shared/decider';
import { DomainError } from '../../../domain/shared/errors';

/** given(events).when(command).then(events) | thenFails(suffix) over a pure decider */
export const scenario =
  <S, C, E>(decider: Decider<S, C, E>) =>
  (...history: E[]) => ({
    when: (command: C) => ({
      then: (expected: unknown[]) => expect(decider.decide(command, fold(decider, history))).toEqual(expected),
      thenMatches: (expected: unknown[]) =>
        expect(decider.decide(command, fold(decider, history))).toMatchObject(expected),
      thenFails: (suffix: string, status?: number) => {
        let error: unknown;
        try {
          decider.decide(command, fold(decider, history));
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(DomainError);
        expect((error as DomainError).suffix).toBe(suffix);
        if (status !== undefined) expect((error as DomainError).status).toBe(status);
      },
    }),
  });
