import type { Resource } from './resources';
import { isResource, RESOURCES } from './resources';

/**
 * Usage is counted from other services' events (spec 001: maintained by projections of their
 * events): each event names one item of a resource (a member, a file, a record, a module) that is
 * now counted or not, with its amount (1, or a file's bytes). A service that lands adds its lines
 * here. Today: identity's members; files (storage bytes; a file in the trash is still billed, spec
 * 002, until permanently deleted); data records and modules with the names those services are
 * expected to publish.
 */
export interface UsageEffect {
  resource: Resource;
  itemId: string;
  amount: number;
  counted: boolean;
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

export const USAGE_SOURCES: Record<string, Source> = {
  'auth.member.added': item('users', 'userId', true),
  'auth.member.restored': item('users', 'userId', true),
  'auth.member.deleted': item('users', 'userId', false),
  'files.file.uploaded': item('storage_bytes', 'fileId', true, 'sizeBytes'),
  // processing replaces a file's content: its bytes are the new content's from then on
  'files.file.processed': item('storage_bytes', 'fileId', true, 'sizeBytes'),
  'files.file.permanent_deleted': item('storage_bytes', 'fileId', false, 'sizeBytes'),
  'data.record.created': item('records', 'recordId', true),
  'data.record.deleted': item('records', 'recordId', false),
  'module.registry.activated': item('modules', 'moduleId', true),
  'module.registry.deactivated': item('modules', 'moduleId', false),
};

export const USAGE_EVENT_TYPES = Object.keys(USAGE_SOURCES);

export const usageEffectOf = (type: string, data: Record<string, unknown>): UsageEffect | null =>
  USAGE_SOURCES[type]?.(data) ?? null;

/** a tenant's counter per resource */
export type Usage = Record<Resource, number>;

export const emptyUsage = (): Usage => Object.fromEntries(RESOURCES.map((r) => [r, 0])) as Usage;

/** the counters read from billing's usage read model (resource, used) — unknown resources ignored */
export const usageFromRows = (rows: readonly { resource: string; used: string | number }[]): Usage => {
  const usage = emptyUsage();
  for (const r of rows) if (isResource(r.resource)) usage[r.resource] = Number(r.used);
  return usage;
};
