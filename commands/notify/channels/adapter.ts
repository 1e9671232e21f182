import type { z } from 'zod';
import type { FieldError } from '../../../domain/shared/errors';
import type { TemplateFormat } from '../../../domain/notify/events';
import type { Priority } from '../../../domain/notify/priority';

/**
 * What waits in the queue for one notification (notify.deliveries.message): the content rendered
 * for its channel. It never goes into an event (one-time tokens travel in identity's mail headers).
 */
export interface DeliveryMessage {
  /** the address for channels that deliver to one (email) */
  to: string | null;
  /** the user for channels that deliver to a person's devices (websocket, push) */
  userId: string | null;
  subject: string;
  text: string;
  format: TemplateFormat;
  /** an HTML body for mail */
  html: string | null;
  /** extra mail headers (X-…) */
  headers: Record<string, string>;
  /** the sender's meta, passed on to real-time and push clients */
  data: Record<string, unknown>;
}

export interface DeliveryJob {
  notificationId: string;
  tenantId: string;
  /** the queue's acceptance order (notify.deliveries.seq) */
  queuedSeq: number;
  priority: Priority;
  /** 1-based attempt of this cycle */
  attempt: number;
  /** an earlier attempt may have reached the recipient (its outcome is unknown) */
  possibleDuplicate: boolean;
  channel: { name: string; type: string; id: string | null; config: Record<string, unknown> };
  message: DeliveryMessage;
  createdAt: string;
}

export type DeliveryOutcome =
  | { ok: true }
  /** permanent: retrying cannot help (mailbox refused with 5xx, no live push subscription); unknownOutcome: it may have arrived (timeout) */
  | { ok: false; permanent: boolean; error: string; unknownOutcome?: boolean };

/**
 * A channel adapter. The built-in ones are email, websocket and push; a module adds its own with
 * registerChannelAdapter (commands/notify/channels/registry.ts), and tenants register channels
 * (named instances with their own config) of any installed type through POST /v1/notify/channels.
 */
export interface ChannelAdapter {
  type: string;
  /** recipient kinds it delivers to */
  recipients: readonly ('userId' | 'address')[];
  /** checks an address recipient (an email address for email) */
  address?: z.ZodType<string>;
  /** the config of a channel of this type registered by a tenant */
  config: z.ZodType<Record<string, unknown>>;
  /** config keys that are secrets: sealed at rest, redacted on read and in events */
  secretFields: readonly string[];
  /**
   * the URLs of a (parsed) config that the adapter connects to — a tenant's server: checked by the
   * outbound guard when the channel is registered, and the adapter connects through kernel.outbound
   */
  destinations?(config: Record<string, unknown>): { field: string; url: string }[];
  /** a refusal at accept time for content the channel cannot carry (a push payload over its size) */
  check?(message: DeliveryMessage): FieldError | null;
  /** one attempt; must settle by the signal's deadline */
  send(job: DeliveryJob, signal: AbortSignal): Promise<DeliveryOutcome>;
  /** optional: one attempt for each of many jobs at once (an outcome per job, in order), under one deadline */
  sendMany?(jobs: readonly DeliveryJob[], signal: AbortSignal): Promise<DeliveryOutcome[]>;
  close?(): Promise<void>;
}

export const failure = (error: unknown, permanent: boolean, unknownOutcome = false): DeliveryOutcome => ({
  ok: false,
  permanent,
  error: (error instanceof Error ? error.message : String(error)).slice(0, 500),
  unknownOutcome,
});
