import { z } from 'zod';

/** what the registry shows of a module */
export const ModuleView = z.object({
  id: z.string(), slug: z.string(), name: z.string().nullable(), version: z.string(), description: z.string().nullable(), status: z.string(),
  events: z.object({ publishes: z.array(z.string()), subscribes: z.array(z.string()), endpoint: z.string().nullable() }),
  manifest: z.record(z.string(), z.unknown()), registeredBy: z.string(), registeredAt: z.string(), updatedAt: z.string(),
});

/** a module key as issued: the key and its webhook secret are shown once */
export const IssuedKeyView = z.object({
  keyId: z.string(), key: z.string().describe('Authorization: Bearer <key>; shown once'),
  webhookSecret: z.string().describe('verifies X-Platform-Signature of event deliveries; shown once'), createdAt: z.string(),
});

export const KeyView = z.object({ keyId: z.string(), createdAt: z.string(), createdBy: z.string(), revokedAt: z.string().nullable(), lastUsedAt: z.string().nullable() });
