import { typeMatches } from '../shared/event';
import type { UsageEventType } from '../shared/usage-events';
import { USAGE_EVENTS } from '../shared/usage-events';
import type { Resource } from './resources';
import { isResource, RESOURCES } from './resources';

/**
 * Usage is counted from other services' events (spec 001: maintained by projections of their
 * events): each event names one item of a resource (a member, a file, a record, a module) that is
 * now counted or not, with its amount (1, or a file's bytes). The types are the catalog's
 * (domain/shared/usage-events.ts), shared with their producers: identity's members; files (storage
 * bytes; a file in the trash is still billed, spec 002, until permanently deleted); every record of
 * every generated model (data.<module>.<model>.created / deleted — the platform's own records are
 * not data-layer records, spec 001 PlanLimits.records); a module's installations, booked to the
 * tenant that installed it (the registry's events live in the platform tenant's streams).
 * Users' pending invitations and the day's bus events are counted from their owners' tables
 * (commands/billing/lookups.ts): they are not events of the log.
 */
export interface UsageEffect {
  resource: Resource;
  itemId: string;
  amount: number;
  counted: boolean;
  /** the tenant the item is booked to when it is not the event's (a module's installation) */
  tenantId?: string;
}

type Source = (data: Record<string, unknown>) => UsageEffect | null;

const id = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : null);
const amount = (v: unknown): number | null => {
  const n = typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : null;
};
const item =
  (resource: Resource, key: string, counted: boolean, size?: string): Source =>
  (data) => {
    const itemId = id(data[key]);
    if (!itemId) return null;
    const bytes = size === undefined ? 1 : amount(data[size]);
    if (bytes === null) return counted ? null : { resource, itemId, amount: 0, counted };
    return { resource, itemId, amount: bytes, counted };
  };

/** a generated record: one item per module, model and id */
const record =
  (counted: boolean): Source =>
  (data) => {
    const [module, model, recordId] = [id(data.module), id(data.model), id(data.id)];
    return module && model && recordId
      ? { resource: 'records', itemId: `${module}.${model}.${recordId}`, amount: 1, counted }
      : null;
  };

/** a module's installation, booked to the tenant it serves */
const installation =
  (counted: boolean): Source =>
  (data) => {
    const [moduleId, tenantId] = [id(data.moduleId), id(data.tenantId)];
    return moduleId && tenantId ? { resource: 'modules', itemId: moduleId, amount: 1, counted, tenantId } : null;
  };

export const USAGE_SOURCES: Record<UsageEventType, Source> = {
  [USAGE_EVENTS.memberAdded]: item('users', 'userId', true),
  [USAGE_EVENTS.memberRestored]: item('users', 'userId', true),
  [USAGE_EVENTS.memberDeleted]: item('users', 'userId', false),
  [USAGE_EVENTS.fileUploaded]: item('storage_bytes', 'fileId', true, 'sizeBytes'),
  // processing replaces a file's content: its bytes are the new content's from then on
  [USAGE_EVENTS.fileProcessed]: item('storage_bytes', 'fileId', true, 'sizeBytes'),
  [USAGE_EVENTS.filePermanentlyDeleted]: item('storage_bytes', 'fileId', false, 'sizeBytes'),
  [USAGE_EVENTS.recordCreated]: record(true),
  [USAGE_EVENTS.recordDeleted]: record(false),
  [USAGE_EVENTS.moduleActivated]: installation(true),
  [USAGE_EVENTS.moduleDeactivated]: installation(false),
};

/** what billing's usage projection and the caches of limits listen to (patterns included) */
export const USAGE_EVENT_TYPES: readonly string[] = Object.keys(USAGE_SOURCES);

export const usageEffectOf = (type: string, data: Record<string, unknown>): UsageEffect | null => {
  const source = (Object.keys(USAGE_SOURCES) as UsageEventType[]).find((t) => typeMatches(t, type));
  return source ? USAGE_SOURCES[source](data) : null;
};

/** the tenant whose usage an event changes (a module's installation: the installing tenant's) */
export const usageTenantOf = (type: string, tenantId: string, data: Record<string, unknown>): string =>
  usageEffectOf(type, data)?.tenantId ?? tenantId;

/** a tenant's counter per resource */
export type Usage = Record<Resource, number>;

export const emptyUsage = (): Usage => Object.fromEntries(RESOURCES.map((r) => [r, 0])) as Usage;

/** the counters read from billing's usage read model (resource, used) — unknown resources ignored */
export const usageFromRows = (rows: readonly { resource: string; used: string | number }[]): Usage => {
  const usage = emptyUsage();
  for (const r of rows) if (isResource(r.resource)) usage[r.resource] = Number(r.used);
  return usage;
};

/** the day events_per_day counts in: the UTC date of the moment (YYYY-MM-DD) */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);
