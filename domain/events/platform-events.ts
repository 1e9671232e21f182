import type { z } from 'zod';
import { AuditEvent } from '../audit/sources';
import { PlanEvent } from '../billing/plan';
import { SubscriptionEvent as BillingSubscriptionEvent } from '../billing/subscription';
import { FileEvent } from '../files/events';
import { AccountEvent } from '../identity/account';
import { MembershipEvent } from '../identity/membership';
import { MfaEvent } from '../identity/mfa';
import { RoleEvent } from '../identity/role';
import { TenantEvent } from '../identity/tenant';
import { ModuleEvent } from '../modules/events';
import { Cents } from '../money/amount';
import { MetaText, ReversalEvent, WalletEvent } from '../money/events';
import { moneyWirePayload } from '../money/wire';
import { ChannelEvent, NotificationEvent, TemplateEvent } from '../notify/events';
import { FileMeta } from '../files/events';
import { objectMembers, RawJson } from '../shared/json';
import { SchemaEvent, BusSubscriptionEvent } from './events';
import type { PayloadSchema } from './proto-of-zod';
import { payloadMessageOf, payloadsOf } from './proto-of-zod';

/**
 * What the platform's own services publish on each platform.<domain>.events topic: the event
 * unions each domain writes its events with (the same zod schemas its deciders and projections
 * use). The topic's schema (GET /events/topics/:topic/schema) and the payload's wire form are
 * derived from them. platform.data.events carries the records of modules' generated models, whose
 * columns are each module's own: its payload stays free.
 */
export const PLATFORM_EVENT_UNIONS: Readonly<Record<string, readonly z.ZodDiscriminatedUnion[]>> = {
  auth: [AccountEvent, TenantEvent, MembershipEvent, RoleEvent, MfaEvent],
  module: [ModuleEvent],
  money: [WalletEvent, ReversalEvent],
  files: [FileEvent],
  notify: [NotificationEvent, TemplateEvent, ChannelEvent],
  audit: [AuditEvent],
  billing: [PlanEvent, BillingSubscriptionEvent],
  events: [BusSubscriptionEvent, SchemaEvent],
  data: [],
};

/** the event types of a platform domain, with their payload schemas */
export const platformPayloadsOf = (domain: string): PayloadSchema[] =>
  (PLATFORM_EVENT_UNIONS[domain] ?? []).flatMap((u) => payloadsOf(u));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * An event's payload as the log carries it (spec 002, Event: payload is an object): what the event
 * store holds, with money's amounts as JSON integers and a `meta` kept as its JSON text (money's,
 * files') written as the object it is.
 */
export const wirePayloadOf = (type: string, data: unknown): Record<string, unknown> => {
  const payload = isObject(data) ? data : { value: data };
  const wire = type.startsWith('money.') ? moneyWirePayload(payload) : { ...payload };
  if (typeof wire.meta === 'string' && wire.meta.trim().startsWith('{')) wire.meta = new RawJson(wire.meta);
  return wire;
};

// an integer literal beyond what a double holds exactly (16 digits and more), outside strings
const LONG_INTEGER = /"(?:[^"\\]|\\.)*"|(?<![\d.eE+-])-?\d{16,}(?![.\deE])/g;

/**
 * The inverse of wirePayloadOf, from the Event's exact text (a replay from the log into the
 * projections): money's and files' `meta` back to its text as the client wrote it, long integers
 * (amounts up to 2^63 − 1) as the decimal strings the event store keeps — JSON.parse would round
 * them. Null when the value holds no payload object.
 */
export const storedPayloadOf = (type: string, eventText: string): Record<string, unknown> | null => {
  let members: Map<string, string> | null;
  try {
    const payload = objectMembers(eventText)?.get('payload');
    members = payload === undefined ? null : objectMembers(payload);
  } catch {
    return null;
  }
  if (!members) return null;
  const metaAsText = type.startsWith('money.') || type.startsWith('files.');
  const out: Record<string, unknown> = {};
  for (const [name, text] of members) {
    const value: unknown =
      name === 'meta' && metaAsText && text.startsWith('{')
        ? text
        : JSON.parse(text.replace(LONG_INTEGER, (m) => (m.startsWith('"') ? m : `"${m}"`)));
    Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
};

/** how the wire form is typed in the topic's schema (wirePayloadOf): amounts are integers, meta an object */
const WIRE = { integers: [Cents], objects: [MetaText, FileMeta] } as const;

/**
 * The Protobuf definition of a platform topic, derived from the payloads its domain publishes: the
 * Event envelope (spec 002) and one message per event type, named after it (money.wallet.credited →
 * MoneyWalletCredited), describing the payload of the events of that type.
 */
export const platformTopicSchema = (topic: string, domain: string): string => {
  const payloads = platformPayloadsOf(domain);
  const messages = payloads.map((p) => payloadMessageOf(p, WIRE));
  return `syntax = "proto3";

// ${topic}: every record is the Event below; its payload is the message named after its type
// (money.wallet.credited → MoneyWalletCredited)${payloads.length ? '' : ', free JSON on this topic (each module model has its own columns)'}.
// Derived from the event schemas the ${domain} service writes with; JSON field names are lowerCamelCase.
package ${topic.replace(/[^a-z0-9_.]/g, '_')};

import "google/protobuf/struct.proto";

message Event {
  string event_id = 1;        // UUID v7, for deduplication
  string type = 2;            // domain.entity.verb
  string source = 3;          // the platform service of the domain
  string tenant_id = 4;
  string trace_id = 5;
  string timestamp = 6;       // ISO 8601 UTC
  string schema_version = 7;  // semver
  google.protobuf.Struct payload = 8;
}
${messages.map((m) => `\n${m}\n`).join('')}`;
};
