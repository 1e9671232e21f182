import { z } from 'zod';
import { JsonObject } from '../../domain/shared/json';
import { TemplateFormat } from '../../domain/notify/events';
import { Priority } from '../../domain/notify/priority';
import { VARIABLE_NAME } from '../../domain/notify/template';
import type { SendRequest } from '../../commands/notify/compose';

/** at most 500 recipients in a batch (spec 002): more is 400 batch-limit-exceeded, checked before the schema */
export const BATCH_MAX = 500;

const VariableValue = z.union([z.string().max(10_000), z.number(), z.boolean()]);
export const Variables = z
  .record(z.string().regex(VARIABLE_NAME, 'variable names are identifiers such as firstName'), VariableValue)
  .refine((v) => Object.keys(v).length <= 100, 'at most 100 variables');
export const Recipient = z
  .object({
    userId: z.string().min(1).max(128).optional(),
    address: z.string().min(1).max(320).optional(),
  })
  .strict()
  .refine((r) => (r.userId === undefined) !== (r.address === undefined), 'give exactly one of userId and address')
  .meta({ oneOf: [{ required: ['userId'] }, { required: ['address'] }] });
export const Meta = JsonObject.refine((m) => JSON.stringify(m).length <= 16_384, 'meta must be at most 16 KB of JSON');
const Subject = z.string().max(998);
const Body = z.string().max(65_536);

export const SendBody = z
  .object({
    channel: z.string().min(1).max(100).describe('email, websocket, push, or the name or id of a registered channel'),
    recipient: Recipient.describe('{userId} (an active member of the tenant) or {address}'),
    subject: Subject.optional(),
    body: Body.optional().describe('required unless templateId is given'),
    format: TemplateFormat.default('text').describe('html: the body is HTML (mail sends a text alternative)'),
    priority: Priority.default('normal'),
    templateId: z.string().min(1).max(64).optional(),
    variables: Variables.default({}),
    meta: Meta.default({}),
  })
  .refine((b) => b.body !== undefined || b.templateId !== undefined, {
    message: 'body is required unless templateId is given',
    path: ['body'],
  })
  .meta({ anyOf: [{ required: ['body'] }, { required: ['templateId'] }] });
export type SendBody = z.infer<typeof SendBody>;

export const BatchBody = z
  .object({
    channel: z.string().min(1).max(100),
    recipients: z.array(Recipient.and(z.object({ variables: Variables.optional() }))).min(1, 'at least one recipient'),
    subject: Subject.optional(),
    body: Body.optional(),
    format: TemplateFormat.default('text'),
    priority: Priority.default('normal'),
    templateId: z.string().min(1).max(64).optional(),
    variables: Variables.default({}).describe("for every recipient; a recipient's own variables override them"),
    meta: Meta.default({}),
  })
  .refine((b) => b.body !== undefined || b.templateId !== undefined, {
    message: 'body is required unless templateId is given',
    path: ['body'],
  })
  .meta({ anyOf: [{ required: ['body'] }, { required: ['templateId'] }] });
export type BatchBody = z.infer<typeof BatchBody>;

export const TemplateBody = z.object({
  name: z.string().min(1).max(100),
  channel: z.string().min(1).max(100),
  subject: Subject.default(''),
  body: Body,
  format: TemplateFormat.default('text'),
  variables: z
    .array(z.string().regex(VARIABLE_NAME, 'variable names are identifiers such as firstName'))
    .max(100)
    .optional()
    .describe('declared variables; default: the {{placeholders}} of subject and body'),
});

export const ChannelBody = z.object({
  name: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]*$/, 'letters, digits, space, dot, underscore and dash'),
  type: z.string().min(1).max(64).describe('an installed adapter type: email, websocket, push, or one a module added'),
  iconUrl: z.string().url().max(2048).nullable().default(null),
  config: JsonObject.default({}).describe("the adapter's settings; secrets in it are sealed and redacted on read"),
});

const base64url = (bytes: number, what: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, `${what} in base64url`)
    .refine((v) => Buffer.from(v, 'base64url').length === bytes, `${what}: ${bytes} bytes in base64url`)
    // the document says how long that is: unpadded or padded base64url of exactly those bytes
    .meta({ minLength: Math.ceil((bytes * 4) / 3), maxLength: Math.ceil(bytes / 3) * 4 });
export const PushSubscriptionBody = z.object({
  endpoint: z
    .string()
    .max(2048)
    .refine((v) => URL.canParse(v) && new URL(v).protocol === 'https:', 'the push service endpoint, an https URL')
    .meta({ format: 'uri', pattern: '^https://' }),
  expirationTime: z.number().nullable().optional(),
  keys: z.object({ p256dh: base64url(65, 'the P-256 public key'), auth: base64url(16, 'the auth secret') }),
});

/**
 * A request of the HTTP API as the service's send request. A module's key sends as its module, so its
 * messages count against the per-module limit exactly as a platform module's through kernel.notifications.
 */
export const sendRequestOf = (
  b: Omit<SendBody, 'recipient'> & { recipient: { userId?: string; address?: string } },
  module: string | null,
): SendRequest => ({
  channel: b.channel,
  recipient: b.recipient,
  format: b.format,
  priority: b.priority,
  variables: b.variables,
  meta: b.meta,
  module,
  purpose: null,
  ...(b.subject === undefined ? {} : { subject: b.subject }),
  ...(b.body === undefined ? {} : { body: b.body }),
  ...(b.templateId === undefined ? {} : { templateId: b.templateId }),
});
