import { z } from 'zod';
import { JsonObject } from '../shared/json';

/** spec 002 "Audit record": the resource every read endpoint and the export answer with */
export const AuditRecordView = z.object({
  id: z.string(),
  action: z.string().describe('domain.entity.verb'),
  entityType: z.string(),
  entityId: z.string(),
  actorId: z.string(),
  actorIp: z.string().nullable(),
  actorUserAgent: z.string().nullable(),
  tenantId: z.string(),
  before: JsonObject.nullable(),
  after: JsonObject.nullable(),
  meta: JsonObject.nullable(),
  traceId: z.string().nullable(),
  timestamp: z.string().describe('ISO 8601 UTC'),
});
export type AuditRecordView = z.infer<typeof AuditRecordView>;

type Json = Record<string, unknown>;

/** a record as a source states it, before it is stored */
export interface NewAuditRecord {
  id: string;
  tenantId: string;
  action: string;
  entityType: string;
  entityId: string;
  actorId: string;
  actorIp?: string | null;
  actorUserAgent?: string | null;
  before?: Json | null;
  after?: Json | null;
  meta?: Json | null;
  traceId?: string | null;
  timestamp: string;
}
