import { streamIdOf } from '../../../domain/shared/event';
import { defineAggregate } from '../../../infra/eventstore/aggregate';
import type { UnitOfWork } from '../../../infra/eventstore/unit-of-work';
import type { TallyCommand } from './domain';
import { counterDecider, TallyEvent } from './domain';

export const Counter = defineAggregate({
  name: 'tally.counter',
  decider: counterDecider,
  stateSchema: 'counter.v1',
  toEvent: (e) => TallyEvent.parse(e),
});

/** load, decide, append: the whole of a command handler */
export const handleTally = async (uow: UnitOfWork, command: TallyCommand) => {
  const counter = await uow.load(Counter, streamIdOf('tally.counter', uow.meta.tenantId, command.counterId));
  const { state } = uow.decide(Counter, counter, command);
  return state.status === 'open' ? { id: command.counterId, name: state.name, value: state.value } : null;
};
