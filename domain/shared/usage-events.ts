/**
 * The catalog of the events billing meters (spec 001 resource types): one name per event, read by
 * its producers' tests and by billing's consumer (domain/billing/usage.ts), so a renamed event can
 * not silently stop a count (tests/unit/billing/usage-catalog.spec.ts checks that every consumed
 * type is produced somewhere). A `*` segment stands for any one segment: the generated data layer
 * names its events after the module and the model (data.<module>.<model>.created).
 */
export const USAGE_EVENTS = {
  memberAdded: 'auth.member.added',
  memberRestored: 'auth.member.restored',
  memberDeleted: 'auth.member.deleted',
  fileUploaded: 'files.file.uploaded',
  fileProcessed: 'files.file.processed',
  filePermanentlyDeleted: 'files.file.permanent_deleted',
  recordCreated: 'data.*.*.created',
  recordDeleted: 'data.*.*.deleted',
  moduleActivated: 'module.registry.activated',
  moduleDeactivated: 'module.registry.deactivated',
} as const;

export type UsageEventType = (typeof USAGE_EVENTS)[keyof typeof USAGE_EVENTS];
