import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { BreakingChangesPolicy } from '../../domain/events/compatibility';
import { breakingChanges } from '../../domain/events/compatibility';
import { eventErrors } from '../../domain/events/errors';
import { SchemaEvent } from '../../domain/events/events';
import { schemaDecider } from '../../domain/events/schema';
import { compareSemver } from '../../domain/events/semver';
import { streamIdOf } from '../../domain/shared/event';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import { defineAggregate } from '../../infra/eventstore/aggregate';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Principal } from '../../infra/http/auth';
import { eventsContext } from './context';
import type { Kernel } from '../../infra/kernel';
import type { CurrentSchema, TopicEntry } from '../../domain/events/catalog';
import { currentSchema } from '../../projections/events/queries';
import { schemaVersions } from './lookups';
import { parseSchema } from './proto';

export const SchemaAggregate = defineAggregate({
  name: 'events.topic-schema',
  decider: schemaDecider,
  stateSchema: 'events.topic-schema.v1',
  toEvent: (e) => SchemaEvent.parse(e),
});
const schemaStream = (topic: string): string => streamIdOf('events.topic-schema', PLATFORM_TENANT_ID, topic);

export interface SchemaChange {
  protoDefinition: string;
  schemaVersion: string;
  breakingChangesPolicy?: BreakingChangesPolicy;
}

/** the platform owner changes any topic's schema; a module, its own topic's */
const mayChange = (principal: Principal, entry: TopicEntry): boolean =>
  (principal.permissions.has(PLATFORM_WILDCARD) && !principal.moduleId) ||
  (entry.owner.kind === 'module' && principal.moduleId === entry.owner.moduleId);

/**
 * A new version of a topic's schema (spec 002, Versioning): it must parse, its version must be above
 * the current one, and it must be backward compatible with the current version (BACKWARD) or with
 * every earlier one (BACKWARD_TRANSITIVE); breaking changes are refused with 409, naming each one.
 */
export const registerSchema = async (
  kernel: Kernel,
  uow: UnitOfWork,
  entry: TopicEntry,
  principal: Principal,
  change: SchemaChange,
): Promise<CurrentSchema> => {
  if (!mayChange(principal, entry)) throw eventErrors.schemaForbidden();
  const next = parseSchema(change.protoDefinition);
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`events.schema:${entry.topic}`]);
  const current = await currentSchema(uow.tx, entry);
  const policy = change.breakingChangesPolicy ?? current.breakingChangesPolicy;
  if (current.registeredAt !== null) {
    if (compareSemver(change.schemaVersion, current.schemaVersion) <= 0)
      throw eventErrors.schemaVersionConflict(current.schemaVersion, change.schemaVersion);
    const earlier =
      policy === 'BACKWARD_TRANSITIVE'
        ? [
            ...new Set([
              ...(await schemaVersions(uow.tx, entry.topic)).map((v) => v.proto_definition),
              current.protoDefinition,
            ]),
          ]
        : [current.protoDefinition];
    const problems = earlier.flatMap((definition) => breakingChanges(parseSchema(definition), next));
    const unique = [...new Map(problems.map((p) => [`${p.code}:${p.field}`, p])).values()];
    if (unique.length) throw eventErrors.schemaIncompatible(unique);
  }
  const registeredAt = kernel.clock.now().toISOString();
  const data = {
    topic: entry.topic,
    schemaVersion: change.schemaVersion,
    protoDefinition: change.protoDefinition,
    breakingChangesPolicy: policy,
    registeredBy: principal.userId,
    registeredAt,
  };
  uow.decide(SchemaAggregate, await uow.load(SchemaAggregate, schemaStream(entry.topic)), {
    type: 'RegisterSchema',
    data,
  });
  // publishes check against the schema kept in memory: every process reads it again on its next publish
  uow.afterCommit(() => eventsContext(kernel).schemas.changed());
  return {
    topic: entry.topic,
    schemaVersion: data.schemaVersion,
    protoDefinition: data.protoDefinition,
    breakingChangesPolicy: policy,
    registeredAt,
  };
};
