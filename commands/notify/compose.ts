import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { FieldError } from '../../domain/shared/errors';
import { commonErrors } from '../../domain/shared/errors';
import { isBuiltInChannel } from '../../domain/notify/channel';
import { notifyErrors } from '../../domain/notify/errors';
import type { QueuedData, Recipient, TemplateFormat } from '../../domain/notify/events';
import type { Priority } from '../../domain/notify/priority';
import type { VariableValue } from '../../domain/notify/template';
import { hasControlCharacters, htmlToText, renderTemplate } from '../../domain/notify/template';
import type { Kernel } from '../../infra/kernel';
import type { ChannelAdapter, DeliveryMessage } from './channels/adapter';
import type { NotifyContext } from './context';
import type { StoredTemplate } from './lookups';
import { findChannel, findTemplate } from './lookups';

/** one notification as a sender asks for it (HTTP, a batch recipient, or the kernel port) */
export interface SendRequest {
  channel: string;
  recipient: { userId?: string; address?: string };
  subject?: string;
  body?: string;
  /** an HTML alternative of a text body (mail from the kernel port) */
  html?: string;
  format: TemplateFormat;
  priority: Priority;
  templateId?: string;
  variables: Record<string, VariableValue>;
  meta: Record<string, unknown>;
  /** extra mail headers, X-… only (kernel port) */
  headers?: Record<string, string>;
  module: string | null;
  purpose: string | null;
}

/** a notification checked and rendered, ready to be queued */
export interface PreparedNotification {
  id: string;
  tenantId: string;
  channel: { name: string; type: string; id: string | null };
  recipient: Recipient;
  subject: string;
  priority: Priority;
  templateId: string | null;
  meta: Record<string, unknown>;
  module: string | null;
  purpose: string | null;
  /** counted against the tenant's and module's rate limits and queue cap (the platform's own account mails are not) */
  rateLimited: boolean;
  message: DeliveryMessage;
  createdAt: string;
}

export const queuedData = (p: PreparedNotification): QueuedData => ({
  notificationId: p.id,
  channel: p.channel.name,
  channelType: p.channel.type,
  channelId: p.channel.id,
  recipient: p.recipient,
  subject: p.subject,
  priority: p.priority,
  templateId: p.templateId,
  meta: p.meta,
  module: p.module,
  purpose: p.purpose,
  queuedAt: p.createdAt,
});

/** mail headers a sender may add: X-… names, no line breaks, none of the service's own */
const HEADER_NAME = /^X-[A-Za-z0-9-]{1,64}$/;
const checkHeaders = (headers: Record<string, string>, field: string): void => {
  const bad = Object.entries(headers).filter(
    ([name, value]) =>
      !HEADER_NAME.test(name) || /^x-notification-/i.test(name) || hasControlCharacters(value) || value.length > 998,
  );
  if (bad.length)
    throw commonErrors.validation(
      bad.map(([name]) => ({
        field: `${field}.${name}`,
        message: 'an X-… header name with a value of one line',
        code: 'INVALID_HEADER',
      })),
    );
};

interface ResolvedChannel {
  name: string;
  type: string;
  id: string | null;
  adapter: ChannelAdapter;
}

/**
 * Checks and renders notifications of one tenant: the channel (built in or registered, else 404
 * channel-not-found), the template (404 template-not-found; every declared variable supplied,
 * values escaped for where they land), the recipient (a userId must be an active member: 404;
 * an address must suit the channel), and what the channel can carry. field(i) names the request in
 * problems ('' for a single one, 'recipients[3].' in a batch). All or nothing.
 */
export const composeNotifications = async (
  kernel: Kernel,
  ctx: NotifyContext,
  tenantId: string,
  requests: readonly SendRequest[],
  field: (index: number) => string = () => '',
): Promise<PreparedNotification[]> => {
  const channels = new Map<string, Promise<ResolvedChannel>>();
  const templates = new Map<string, Promise<StoredTemplate>>();
  const channelOf = (name: string) => {
    let found = channels.get(name);
    if (!found) {
      found = resolveChannel(kernel, ctx, tenantId, name);
      channels.set(name, found);
    }
    return found;
  };
  const templateOf = (id: string) => {
    let found = templates.get(id);
    if (!found) {
      found = findTemplate(kernel.db, tenantId, id).then((t) => {
        if (!t) throw notifyErrors.templateNotFound();
        return t;
      });
      templates.set(id, found);
    }
    return found;
  };

  const problems: FieldError[] = [];
  const drafts = await Promise.all(
    requests.map(async (r, i) => {
      const at = field(i);
      const channel = await channelOf(r.channel);
      const template = r.templateId === undefined ? null : await templateOf(r.templateId);
      if (template && template.channel !== channel.name && template.channel !== channel.type) {
        problems.push({
          field: `${at}templateId`,
          message: `the template is for the ${template.channel} channel, not ${channel.name}`,
          code: 'TEMPLATE_CHANNEL_MISMATCH',
        });
      }
      const content = template
        ? { ...renderTemplate(template, r.variables, `${at}variables`), format: template.format }
        : { subject: r.subject ?? '', body: r.body ?? '', format: r.format };
      if (!template && hasControlCharacters(content.subject))
        problems.push({
          field: `${at}subject`,
          message: 'a subject is one line: no line breaks or control characters',
          code: 'INVALID_SUBJECT',
        });
      if (r.headers) checkHeaders(r.headers, `${at}headers`);
      const kind = r.recipient.userId !== undefined ? 'userId' : 'address';
      if (!channel.adapter.recipients.includes(kind)) {
        problems.push({
          field: `${at}recipient.${kind}`,
          message: `the ${channel.name} channel delivers to ${channel.adapter.recipients.join(' or ')}`,
          code: 'RECIPIENT_NOT_SUPPORTED',
        });
      } else if (
        kind === 'address' &&
        channel.adapter.address &&
        !channel.adapter.address.safeParse(r.recipient.address).success
      ) {
        problems.push({
          field: `${at}recipient.address`,
          message: `not an address the ${channel.name} channel can deliver to`,
          code: 'INVALID_ADDRESS',
        });
      }
      return { r, at, channel, template, content };
    }),
  );
  if (problems.length) throw commonErrors.validation(problems);

  const userIds = drafts.flatMap((d) => (d.r.recipient.userId !== undefined ? [d.r.recipient.userId] : []));
  const addresses = await ctx.directory.addresses(kernel.db, tenantId, userIds);
  const unknown = drafts
    .filter((d) => d.r.recipient.userId !== undefined && !addresses.has(d.r.recipient.userId))
    .map((d) => `${d.at}recipient.userId`);
  if (unknown.length) throw notifyErrors.recipientNotFound(unknown);

  const now = ctx.clock.now().toISOString();
  return drafts.map(({ r, at, channel, template, content }) => {
    const userId = r.recipient.userId ?? null;
    const address = r.recipient.address ?? (userId ? (addresses.get(userId) ?? null) : null);
    const html = content.format === 'html' ? content.body : (r.html ?? null);
    const message: DeliveryMessage = {
      to: channel.adapter.recipients.includes('address') ? address : null,
      userId,
      subject: content.subject,
      text: content.format === 'html' ? htmlToText(content.body) : content.body,
      format: content.format,
      html,
      headers: r.headers ?? {},
      data: r.meta,
    };
    const refused = channel.adapter.check?.(message);
    if (refused) throw commonErrors.validation([{ ...refused, field: `${at}${refused.field}` }]);
    return {
      id: ctx.ids.next(),
      tenantId,
      channel: { name: channel.name, type: channel.type, id: channel.id },
      recipient: { userId, address },
      subject: content.subject,
      priority: r.priority,
      templateId: template?.id ?? null,
      meta: r.meta,
      module: r.module,
      purpose: r.purpose,
      rateLimited: tenantId !== PLATFORM_TENANT_ID,
      message,
      createdAt: now,
    };
  });
};

const resolveChannel = async (
  kernel: Kernel,
  ctx: NotifyContext,
  tenantId: string,
  name: string,
): Promise<ResolvedChannel> => {
  if (isBuiltInChannel(name)) {
    const type = name.toLowerCase();
    const adapter = ctx.adapters.get(type);
    if (adapter) return { name: type, type, id: null, adapter };
  }
  const registered = await findChannel(kernel.db, tenantId, name);
  const adapter = registered ? ctx.adapters.get(registered.type) : undefined;
  if (!registered || !adapter || registered.status !== 'active') throw notifyErrors.channelNotFound(name);
  return { name: registered.name, type: registered.type, id: registered.id, adapter };
};
