import { randomInt } from 'node:crypto';
import type { Agent } from 'node:https';
import type { Kernel } from '../../infra/kernel';
import { SecretBox } from '../../infra/security/secret-box';
import type { OutboundGuard } from '../../infra/security/outbound';
import type { Clock, IdGenerator } from '../../infra/runtime/clock';
import type { ChannelAdapter } from './channels/adapter';
import { emailAdapter } from './channels/email';
import { pushAdapter } from './channels/push';
import type { VapidKeys } from '../../projections/notify/shared/vapid';
import { deriveVapidKeys, vapidSubjectOf } from '../../projections/notify/shared/vapid';
import { websocketAdapter } from './channels/websocket';
import type { RecipientDirectory } from './lookups';
import type { NotifySettings } from '../../projections/notify/shared/settings';
import { loadNotifySettings } from '../../projections/notify/shared/settings';

/** what the notify handlers and workers need beyond the unit of work */
export interface NotifyContext {
  settings: NotifySettings;
  directory: RecipientDirectory;
  /** installed channel adapters by type (built in: email, websocket, push) */
  adapters: Map<string, ChannelAdapter>;
  vapid: { keys: VapidKeys; subject: string };
  /** seals registered channels' secrets (key derived from PLATFORM_SECRET_KEY) */
  secrets: SecretBox;
  clock: Clock;
  ids: IdGenerator;
  /** a number in [0, 1) for the retry jitter */
  random: () => number;
  /** the outbound guard: every server a tenant names (its SMTP server, its push services) is reached through it */
  outbound: OutboundGuard;
  /** the HTTPS agent for push services, through the outbound guard */
  pushAgent: Agent;
}

export interface NotifyOverrides {
  settings?: Partial<NotifySettings>;
  directory?: RecipientDirectory;
  random?: () => number;
  /** certificate authorities push services are trusted with besides the system's (tests trust their local push service) */
  pushCa?: string | Buffer;
}

const contexts = new WeakMap<Kernel, NotifyContext>();

const uniformRandom = () => randomInt(0, 2 ** 32) / 2 ** 32;

/** installs the context; tests pass overrides (settings, a directory, a push service's CA) */
export const configureNotify = (kernel: Kernel, overrides: NotifyOverrides = {}): NotifyContext => {
  const previous = contexts.get(kernel);
  const settings = { ...(previous?.settings ?? loadNotifySettings(kernel.config.env)), ...overrides.settings };
  const context: NotifyContext = {
    settings,
    directory: overrides.directory ?? previous?.directory ?? kernel.people,
    adapters: previous?.adapters ?? new Map<string, ChannelAdapter>(),
    vapid: {
      keys: settings.vapid ?? deriveVapidKeys(kernel.engines.secrets),
      subject: vapidSubjectOf(settings.vapidSubject, kernel.config.rootUrl, kernel.config.MAIL_FROM),
    },
    secrets:
      previous?.secrets ?? new SecretBox([{ id: 'n1', key: kernel.engines.secrets.key('notify.channel-secrets.v1') }]),
    clock: kernel.clock,
    ids: kernel.ids,
    random: overrides.random ?? previous?.random ?? uniformRandom,
    outbound: kernel.outbound,
    pushAgent:
      overrides.pushCa !== undefined
        ? kernel.outbound.httpsAgent({ ca: overrides.pushCa })
        : (previous?.pushAgent ?? kernel.outbound.httpsAgent()),
  };
  contexts.set(kernel, context);
  if (!previous) {
    for (const adapter of [
      emailAdapter(kernel),
      websocketAdapter(kernel),
      pushAdapter(kernel, {
        vapid: () => notifyContext(kernel).vapid,
        attemptTimeoutMs: () => notifyContext(kernel).settings.attemptTimeoutMs,
        agent: () => notifyContext(kernel).pushAgent,
      }),
    ])
      context.adapters.set(adapter.type, adapter);
    kernel.onClose('notify.channels', async () => {
      for (const adapter of context.adapters.values()) await adapter.close?.();
    });
  }
  return context;
};

export const notifyContext = (kernel: Kernel): NotifyContext => contexts.get(kernel) ?? configureNotify(kernel);

/**
 * A module's own channel type (sms, chat, …): tenants can then register channels of it and send
 * through them. Call it from the module's RoutePlugin.start and its workers (both must know it).
 * An adapter that connects to a server named in the config declares it in `destinations` (checked
 * at registration) and connects through kernel.outbound (its agents, lookup or connect).
 */
export const registerChannelAdapter = (kernel: Kernel, adapter: ChannelAdapter): void => {
  notifyContext(kernel).adapters.set(adapter.type, adapter);
};
