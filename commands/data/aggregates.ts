import { RecordEvent, recordDecider } from '../../domain/data/record';
import { streamIdOf } from '../../domain/shared/event';
import { defineAggregate } from '../../infra/eventstore/aggregate';

export const RecordAggregate = defineAggregate({
  name: 'record',
  decider: recordDecider,
  stateSchema: 'record.v1',
  toEvent: (e) => RecordEvent.parse(e),
});

/** one stream per record: data:<tenant>:<module>.<model>.<id> (the record's id is the partition key's tail) */
export const recordStream = (tenantId: string, module: string, model: string, id: string): string =>
  streamIdOf('data', tenantId, `${module}.${model}.${id}`);
