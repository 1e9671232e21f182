import type { FieldError } from '../../domain/shared/errors';
import { commonErrors } from '../../domain/shared/errors';
import { isBuiltInChannel, redactConfig, secretsOf } from '../../domain/notify/channel';
import { notifyErrors } from '../../domain/notify/errors';
import type { ChannelView } from '../../domain/notify/views';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { ChannelAggregate, channelStream } from './aggregates';
import { secretContext } from './channel-config';
import type { NotifyContext } from './context';
import { findChannel } from './lookups';

export interface RegisterChannelInput {
  name: string;
  type: string;
  iconUrl: string | null;
  config: Record<string, unknown>;
}

/**
 * The servers a channel's config names (a tenant's SMTP server) that the outbound guard refuses: a
 * public address is required (and checked again on every connection). Run before the command's
 * transaction — it may wait for DNS, which must not hold a database connection — and handed to
 * registerChannel, which refuses with them, so an idempotent replay still answers what was stored.
 */
export const channelDestinationProblems = async (
  ctx: NotifyContext,
  input: Pick<RegisterChannelInput, 'type' | 'config'>,
): Promise<FieldError[]> => {
  const adapter = ctx.adapters.get(input.type);
  const parsed = adapter?.config.safeParse(input.config);
  if (!adapter?.destinations || !parsed?.success) return [];
  const problems = await Promise.all(
    adapter.destinations(parsed.data).map((d) => ctx.outbound.urlProblem(d.field, d.url)),
  );
  return problems.filter((p) => p !== null);
};

/**
 * Registers a channel: a named instance of an installed adapter type with its own config (a
 * tenant's SMTP server, its own VAPID keys). The config is checked by the adapter; its secrets
 * are sealed in notify.channel_secrets and appear redacted in the event and on every read.
 */
export const registerChannel = async (
  uow: UnitOfWork,
  ctx: NotifyContext,
  input: RegisterChannelInput,
  destinationProblems: readonly FieldError[],
): Promise<ChannelView> => {
  const tenantId = uow.meta.tenantId;
  const adapter = ctx.adapters.get(input.type);
  if (!adapter) {
    throw commonErrors.validation([
      {
        field: 'type',
        message: `no adapter of type ${input.type} is installed; installed: ${[...ctx.adapters.keys()].join(', ')}`,
        code: 'UNKNOWN_CHANNEL_TYPE',
      },
    ]);
  }
  if (isBuiltInChannel(input.name)) throw notifyErrors.channelNameTaken(input.name);
  const parsed = adapter.config.safeParse(input.config);
  if (!parsed.success) {
    throw commonErrors.validation(
      parsed.error.issues.map((i) => ({
        field: ['config', ...i.path.map(String)].join('.'),
        message: i.message,
        code: 'INVALID_CONFIG',
      })),
    );
  }
  if (destinationProblems.length) throw commonErrors.validation([...destinationProblems]);
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `notify.channel-name:${tenantId}:${input.name.toLowerCase()}`,
  ]);
  if (await findChannel(uow.tx, tenantId, input.name)) throw notifyErrors.channelNameTaken(input.name);
  const channelId = ctx.ids.next();
  const now = ctx.clock.now().toISOString();
  const config = redactConfig(parsed.data, adapter.secretFields);
  const secrets = secretsOf(parsed.data, adapter.secretFields);
  if (Object.keys(secrets).length) {
    await uow.tx.query('INSERT INTO notify.channel_secrets (tenant_id, channel_id, sealed) VALUES ($1, $2, $3)', [
      tenantId,
      channelId,
      ctx.secrets.seal(JSON.stringify(secrets), secretContext(tenantId, channelId)),
    ]);
  }
  const loaded = await uow.load(ChannelAggregate, channelStream(tenantId, channelId));
  uow.decide(ChannelAggregate, loaded, {
    type: 'RegisterChannel',
    data: { channelId, name: input.name, type: input.type, iconUrl: input.iconUrl, config, registeredAt: now },
  });
  return {
    id: channelId,
    name: input.name,
    type: input.type,
    iconUrl: input.iconUrl,
    status: 'active',
    config,
    registeredAt: now,
    builtIn: false,
  };
};
