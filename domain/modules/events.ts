import { z } from 'zod';
import { Manifest } from './manifest';

/**
 * The module registry's events (platform.module.events, spec 002 topics table). Registration is the
 * first; the data-model layer adds installation, activation, update and deletion to the same stream.
 */
const ModuleRegistered = z.object({
  type: z.literal('module.registry.registered'),
  data: z.object({
    moduleId: z.string(),
    slug: z.string(),
    version: z.string(),
    manifest: Manifest,
    registeredBy: z.string(),
    registeredAt: z.string(),
  }),
});

export const ModuleEvent = z.discriminatedUnion('type', [ModuleRegistered]);
export type ModuleEvent = z.infer<typeof ModuleEvent>;
export type ModuleRegisteredData = z.infer<typeof ModuleRegistered>['data'];
export const moduleEventTypes = ModuleEvent.options.map((o) => o.shape.type.value);
