import type { Decider } from '../shared/decider';
import type { ChannelData, ChannelEvent } from './events';

/** the channels every tenant has without registering them (spec 002: websocket and push; email through the mail port) */
export const BUILT_IN_CHANNELS = ['email', 'websocket', 'push'] as const;
export type BuiltInChannel = (typeof BUILT_IN_CHANNELS)[number];
export const isBuiltInChannel = (name: string): name is BuiltInChannel =>
  (BUILT_IN_CHANNELS as readonly string[]).includes(name.toLowerCase());

export const REDACTED = '[redacted]';
/** config keys that hold secrets whatever the adapter says */
const SECRET_KEY = /secret|password|passwd|token|private|credential|api[-_]?key|smtp[-_]?url|auth/i;

/** the config as it may be shown and published: every secret (the adapter's, or any key that looks like one) replaced */
export const redactConfig = (
  config: Record<string, unknown>,
  secretFields: readonly string[],
): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      key,
      secretFields.includes(key) || SECRET_KEY.test(key) ? REDACTED : value,
    ]),
  );

/** the secret part of a config, sealed apart from the event */
export const secretsOf = (config: Record<string, unknown>, secretFields: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(Object.entries(config).filter(([key]) => secretFields.includes(key) || SECRET_KEY.test(key)));

export type Channel = { status: 'none' } | { status: 'active'; channelId: string; name: string; type: string };
export type ChannelCommand = { type: 'RegisterChannel'; data: ChannelData };

export const channelDecider: Decider<Channel, ChannelCommand, ChannelEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_s, e) => ({ status: 'active', channelId: e.data.channelId, name: e.data.name, type: e.data.type }),
  decide: (c, s) => (s.status === 'none' ? [{ type: 'notify.channel.registered', data: c.data }] : []),
};
