import { z } from 'zod';

/**
 * A module's manifest (spec 002: "manifest.events.publishes / subscribes"; the data-model layer adds
 * migrations, models and permissions to the same document). Registered by the platform owner; the
 * registry keeps it as given, after these checks.
 */

/** the platform's own domains: a module can neither take one as its slug nor publish into it */
export const PLATFORM_DOMAINS: readonly string[] = [
  'auth',
  'iam',
  'identity',
  'module',
  'modules',
  'money',
  'files',
  'notify',
  'audit',
  'billing',
  'data',
  'events',
  'app',
  'platform',
  'gateway',
  'system',
];

/** a slug names the module's topic (platform.<slug>.events), its event types (<slug>.*) and its SQL schema (module_<slug>) */
export const Slug = z
  .string()
  .regex(/^[a-z][a-z0-9_]{1,31}$/, 'a slug is 2 to 32 lowercase letters, digits or underscores, starting with a letter')
  .refine((s) => !PLATFORM_DOMAINS.includes(s), 'this slug names a platform domain');

/** domain.entity.verb: lowercase segments, three or more */
export const EVENT_TYPE = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*){2,}$/;
export const EventType = z
  .string()
  .max(200)
  .regex(EVENT_TYPE, 'an event type is domain.entity.verb (lowercase, three segments or more)');

/** platform.<domain>.events */
export const TOPIC = /^platform\.[a-z][a-z0-9_]*\.events$/;
export const TopicName = z.string().max(200).regex(TOPIC, 'a topic is platform.<domain>.events');

/** semver 2.0.0 (no leading zeros; pre-release and build allowed) */
export const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
export const SemVer = z.string().max(64).regex(SEMVER, 'a version is semver, such as 1.2.0');

const HttpUrl = z
  .string()
  .max(2048)
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'an http(s) URL');

export const ManifestEvents = z
  .object({
    /** event types the module may publish, each <slug>.<entity>.<verb> */
    publishes: z.array(EventType).max(500).default([]),
    /** topics the module may subscribe to; empty: no subscriptions */
    subscribes: z.array(TopicName).max(100).default([]),
    /** where the bus delivers the module's subscriptions (signed POSTs); https outside development and test */
    endpoint: HttpUrl.optional(),
    /** the Protobuf definition of the module's topic, and its semver */
    schema: z
      .object({
        protoDefinition: z
          .string()
          .min(1)
          .max(256 * 1024),
        schemaVersion: SemVer,
      })
      .strict()
      .optional(),
  })
  .strict();

/** a SQL identifier the data layer names tables and columns by (no quoting needed) */
export const SqlName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/, 'lowercase letters, digits and underscores, starting with a letter');

export const ManifestMigration = z
  .object({
    version: z.number().int().min(1).max(1_000_000),
    name: z.string().min(1).max(200),
    sql: z
      .string()
      .min(1)
      .max(1024 * 1024),
  })
  .strict();
export type ManifestMigration = z.infer<typeof ManifestMigration>;

export const ManifestModel = z
  .object({
    name: SqlName,
    /** the table in module_<slug>; the model's name by default */
    table: SqlName.optional(),
    autoApi: z.boolean().default(false),
  })
  .strict();
export type ManifestModel = z.infer<typeof ManifestModel>;

/** a model's table: its own name unless the manifest names one */
export const tableOfModel = (m: ManifestModel): string => m.table ?? m.name;
/** the SQL schema of a module */
export const schemaOfModule = (slug: string): string => `module_${slug}`;

export const Manifest = z
  .object({
    slug: Slug,
    name: z.string().min(1).max(200).optional(),
    version: SemVer,
    description: z.string().max(2000).optional(),
    events: ManifestEvents.default({ publishes: [], subscribes: [] }),
    /** numbered SQL files, applied in order into schema module_<slug> (the CLI reads them from migrations/NNNN_<name>.sql) */
    migrations: z.array(ManifestMigration).max(1000).default([]),
    /** the module's models: a table each; autoApi generates CRUD endpoints and permissions */
    models: z.array(ManifestModel).max(200).default([]),
    /** the module's own permissions beyond the generated ones (key → description) */
    permissions: z
      .record(
        z
          .string()
          .max(200)
          .regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_-]+)+$/, 'a permission is a dotted key'),
        z.string().max(500),
      )
      .optional(),
    /**
     * What the module's own key may do beyond the bus (README, Modules and data): permissions over its
     * own models (<slug>.<model>.read|write|delete, <slug>.*, its own `permissions`) and the platform
     * permissions a module may hold for itself (MODULE_GRANTABLE); granted to the key, never to a role.
     */
    keyPermissions: z
      .array(
        z
          .string()
          .max(200)
          .regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_-]+)*\.([a-z0-9_-]+|\*)$/, 'a permission is a dotted key or <module>.*'),
      )
      .max(200)
      .optional(),
  })
  .strict();
export type Manifest = z.infer<typeof Manifest>;

/**
 * The platform permissions a module's key may be granted: the bus (always, scoped to its manifest by
 * the bus) and sending notifications as itself (counted against its per-module limit). Reading the
 * tenant's history, managing channels, templates, roles, money or the registry stay with people.
 */
export const MODULE_BUS_PERMISSIONS: readonly string[] = ['events.publish', 'events.subscribe', 'events.manage'];
export const MODULE_GRANTABLE: readonly string[] = [...MODULE_BUS_PERMISSIONS, 'notify.send'];
const GENERATED_ACTIONS = ['read', 'write', 'delete'];
/** the first segments of the platform's permissions: its domains and identity's users.* and roles.* */
const PLATFORM_PERMISSION_DOMAINS: readonly string[] = [...PLATFORM_DOMAINS, 'users', 'roles'];

/** why a module may not hold this permission for itself, or null when it may */
const keyPermissionProblem = (m: Manifest, key: string): { message: string; code: string } | null => {
  if (MODULE_GRANTABLE.includes(key)) return null;
  const domain = key.split('.')[0] ?? '';
  if (domain !== m.slug) {
    return PLATFORM_PERMISSION_DOMAINS.includes(domain)
      ? {
          message: `a module key may hold only ${MODULE_GRANTABLE.join(', ')} of the platform`,
          code: 'PLATFORM_PERMISSION',
        }
      : { message: `a module key may hold only ${m.slug}.* permissions of modules`, code: 'FOREIGN_MODULE' };
  }
  if (key === `${m.slug}.*` || Object.hasOwn(m.permissions ?? {}, key)) return null;
  const [, model, action, ...rest] = key.split('.');
  const generated = m.models.find((x) => x.name === model && x.autoApi);
  if (generated && rest.length === 0 && GENERATED_ACTIONS.includes(action ?? '')) return null;
  return {
    message: `${key} is neither a generated permission of an autoApi model of ${m.slug} nor one of its permissions`,
    code: 'UNKNOWN_PERMISSION',
  };
};

/** the domain of an event type: its first segment */
export const domainOfType = (type: string): string => type.slice(0, type.indexOf('.'));
/** the domain of a topic: platform.<domain>.events */
export const domainOfTopic = (topic: string): string => topic.split('.')[1] ?? '';
export const topicOfDomain = (domain: string): string => `platform.${domain}.events`;
export const dlqTopicOfDomain = (domain: string): string => `platform.${domain}.dlq`;

export interface ManifestProblem {
  field: string;
  message: string;
  code: string;
}

/**
 * Rules beyond the shape: a module publishes only in its own domain (so no module can speak for
 * another, or for the platform), and its topic is platform.<slug>.events.
 */
export const manifestProblems = (m: Manifest): ManifestProblem[] => {
  const problems: ManifestProblem[] = [];
  m.events.publishes.forEach((type, i) => {
    if (domainOfType(type) !== m.slug)
      problems.push({
        field: `events.publishes.${i}`,
        message: `a module publishes only ${m.slug}.* types`,
        code: 'FOREIGN_DOMAIN',
      });
  });
  if (new Set(m.events.publishes).size !== m.events.publishes.length)
    problems.push({ field: 'events.publishes', message: 'types are listed once', code: 'DUPLICATE' });
  if (new Set(m.events.subscribes).size !== m.events.subscribes.length)
    problems.push({ field: 'events.subscribes', message: 'topics are listed once', code: 'DUPLICATE' });
  m.migrations.forEach((mig, i) => {
    if (mig.version !== i + 1)
      problems.push({
        field: `migrations.${i}.version`,
        message: `migrations are numbered 1, 2, 3, … in order (expected ${i + 1})`,
        code: 'NOT_SEQUENTIAL',
      });
  });
  const names = m.models.map((x) => x.name);
  if (new Set(names).size !== names.length)
    problems.push({ field: 'models', message: 'models are listed once', code: 'DUPLICATE' });
  // /data/<module>/models is the introspection path: a model of that name could never be reached
  m.models.forEach((x, i) => {
    if (x.name === 'models')
      problems.push({ field: `models.${i}.name`, message: 'models is a reserved name', code: 'RESERVED' });
  });
  Object.keys(m.permissions ?? {}).forEach((key) => {
    if (!key.startsWith(`${m.slug}.`))
      problems.push({
        field: `permissions.${key}`,
        message: `a module registers only ${m.slug}.* permissions`,
        code: 'FOREIGN_DOMAIN',
      });
  });
  const keyPermissions = m.keyPermissions ?? [];
  keyPermissions.forEach((key, i) => {
    const problem = keyPermissionProblem(m, key);
    if (problem) problems.push({ field: `keyPermissions.${i}`, ...problem });
  });
  if (new Set(keyPermissions).size !== keyPermissions.length)
    problems.push({ field: 'keyPermissions', message: 'permissions are listed once', code: 'DUPLICATE' });
  if (m.events.subscribes.length > 0 && !m.events.endpoint)
    problems.push({
      field: 'events.endpoint',
      message: 'a module that subscribes names the endpoint its events are delivered to',
      code: 'REQUIRED',
    });
  return problems;
};
