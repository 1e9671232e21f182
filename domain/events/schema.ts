import type { Decider } from '../shared/decider';
import type { SchemaEvent, SchemaRegisteredData } from './events';

/** A topic's schema history: each registration is a version; the compatibility check runs before (commands/events/schemas.ts). */
export interface TopicSchema {
  versions: { schemaVersion: string; protoDefinition: string }[];
}

export type SchemaCommand = { type: 'RegisterSchema'; data: SchemaRegisteredData };

export const schemaDecider: Decider<TopicSchema, SchemaCommand, SchemaEvent> = {
  initialState: () => ({ versions: [] }),
  evolve: (s, e) => ({
    versions: [...s.versions, { schemaVersion: e.data.schemaVersion, protoDefinition: e.data.protoDefinition }],
  }),
  decide: (c) => [{ type: 'events.schema.registered', data: c.data }],
};
