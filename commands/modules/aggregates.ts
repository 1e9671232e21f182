import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { ModuleEvent } from '../../domain/modules/events';
import { moduleDecider } from '../../domain/modules/registry';
import { streamIdOf } from '../../domain/shared/event';
import { defineAggregate } from '../../infra/eventstore/aggregate';

export const ModuleAggregate = defineAggregate({
  name: 'module',
  decider: moduleDecider,
  stateSchema: 'module.v2',
  toEvent: (e) => ModuleEvent.parse(e),
});

/** the registry is the platform's: module streams live in the platform tenant */
export const moduleStream = (moduleId: string): string => streamIdOf('module', PLATFORM_TENANT_ID, moduleId);
