import { z } from 'zod';
import type { Manifest } from './manifest';

/** what the registry shows of a module */
export const ModuleView = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string().nullable(),
  version: z.string(),
  description: z.string().nullable(),
  status: z.string(),
  events: z.object({
    publishes: z.array(z.string()),
    subscribes: z.array(z.string()),
    endpoint: z.string().nullable(),
  }),
  manifest: z.record(z.string(), z.unknown()),
  registeredBy: z.string(),
  registeredAt: z.string(),
  updatedAt: z.string(),
  /** the version its migrations reached in module_<slug> (null before the first install) */
  schemaVersion: z.number().int().nullable().optional(),
  /** spec 002, Module status: set with status error */
  migrationError: z.string().nullable().optional(),
});

/** the data layer's state of a module's schema, as the registry shows it */
export interface SchemaStatus {
  version: number;
  dirty: boolean;
  migration_error: string | null;
}

/** a module key as issued: the key and its webhook secret are shown once */
export const IssuedKeyView = z.object({
  keyId: z.string(),
  key: z.string().describe('Authorization: Bearer <key>; shown once'),
  webhookSecret: z.string().describe('verifies X-Platform-Signature of event deliveries; shown once'),
  createdAt: z.string(),
});

export const KeyView = z.object({
  keyId: z.string(),
  createdAt: z.string(),
  createdBy: z.string(),
  revokedAt: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
});

/** a registry row as both sides read it (rm.modules) */
export interface ModuleRecord {
  id: string;
  slug: string;
  name: string | null;
  version: string;
  description: string | null;
  status: string;
  manifest: Manifest;
  registered_by: string;
  registered_at: Date;
  updated_at: Date;
}

/** a module whose last migration failed shows status error with its migrationError (spec 002, Module status) */
export const moduleView = (r: ModuleRecord, schema?: SchemaStatus | null): z.infer<typeof ModuleView> => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  version: r.version,
  description: r.description,
  status: schema?.dirty && r.status === 'registered' ? 'error' : r.status,
  ...(schema === undefined
    ? {}
    : { schemaVersion: schema?.version ?? null, migrationError: schema?.dirty ? schema.migration_error : null }),
  events: {
    publishes: r.manifest.events.publishes,
    subscribes: r.manifest.events.subscribes,
    endpoint: r.manifest.events.endpoint ?? null,
  },
  manifest: r.manifest,
  registeredBy: r.registered_by,
  registeredAt: r.registered_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
