/**
 * The one permission rule, applied the same when a role is written and when a request is checked
 * (spec 000, Roles and permissions): the exact key first, then the wildcard {module}.* of its first
 * segment; platform.* grants everything. Only {module}.* is a wildcard: a deeper form such as
 * money.wallets.* would never match at the check, so it is refused where roles are written.
 */
export const PLATFORM_WILDCARD = 'platform.*';

/** the module of a permission key: its first segment */
export const moduleOf = (key: string): string => key.slice(0, Math.max(0, key.indexOf('.')));

export const isWildcard = (key: string): boolean => key.endsWith('.*');

/** the only wildcard form: {module}.* */
export const isModuleWildcard = (key: string): boolean => /^[a-z][a-z0-9_-]*\.\*$/.test(key);

/**
 * Whether holding `held` grants `key`. A wildcard asked for (when granting one) is granted only by
 * the same wildcard or platform.*: it covers permissions registered later, which no set of exact
 * keys does.
 */
export const grants = (held: ReadonlySet<string>, key: string): boolean => {
  if (held.has(key) || held.has(PLATFORM_WILDCARD)) return true;
  if (isWildcard(key)) return false;
  const module = moduleOf(key);
  return module.length > 0 && held.has(`${module}.*`);
};
