import { z } from 'zod';
import type { Decider } from '../../../domain/shared/decider';
import { assertNever } from '../../../domain/shared/decider';
import { commonErrors, defineErrors } from '../../../domain/shared/errors';

/**
 * A sample context used by the kernel's tests: counters that a tenant creates and increments.
 * It is built exactly as a real service is: a decider, a command handler, projections and two
 * route plugins.
 */
export const TallyEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('tally.counter.created'), data: z.object({ counterId: z.string(), name: z.string() }) }),
  z.object({
    type: z.literal('tally.counter.incremented'),
    data: z.object({ counterId: z.string(), by: z.number().int(), value: z.number().int() }),
  }),
]);
export type TallyEvent = z.infer<typeof TallyEvent>;

export type Counter = { status: 'none' } | { status: 'open'; name: string; value: number };

export type TallyCommand =
  { type: 'CreateCounter'; counterId: string; name: string } | { type: 'Increment'; counterId: string; by: number };

export const tallyErrors = defineErrors({
  counterExists: () => ({ status: 409, suffix: 'conflict', title: 'Conflict', detail: 'The counter exists already.' }),
});

export const counterDecider: Decider<Counter, TallyCommand, TallyEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'tally.counter.created':
        return { status: 'open', name: e.data.name, value: 0 };
      case 'tally.counter.incremented':
        return s.status === 'open' ? { ...s, value: e.data.value } : s;
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'CreateCounter':
        if (s.status === 'open') throw tallyErrors.counterExists();
        return [{ type: 'tally.counter.created', data: { counterId: c.counterId, name: c.name } }];
      case 'Increment':
        if (s.status !== 'open') throw commonErrors.notFound('The counter does not exist.');
        return [
          { type: 'tally.counter.incremented', data: { counterId: c.counterId, by: c.by, value: s.value + c.by } },
        ];
      default:
        return assertNever(c);
    }
  },
};
