import { fold } from '../../domain/shared/decider';
import type { NotificationCommand } from '../../domain/notify/notification';
import { notificationDecider } from '../../domain/notify/notification';
import type { NotificationEvent } from '../../domain/notify/events';
import { priorityRank } from '../../domain/notify/priority';
import { rateScopes } from '../../domain/notify/rate';
import type { AppendRequest } from '../../infra/eventstore/event-store';
import type { RateCandidate, WindowRow } from '../../infra/queue';
import { admitLocked } from '../../infra/queue';
import { NotificationAggregate, notificationStream } from './aggregates';
import type { BufferEntry } from './channels/websocket';
import { socketPayloadOf } from './channels/websocket';
import type { PreparedNotification } from './compose';
import { queuedData } from './compose';

/**
 * Websocket notifications delivered by the transaction that accepts them (docs/decisions.md):
 * delivering one is writing its buffer row and publishing it, both of which can happen at
 * acceptance, so a queue row, a worker's claim and the outcome's transaction (five round trips and
 * two more appends, serialized behind every claim of the batch before it) are skipped. It is the
 * queue's own decision, taken earlier: a notification goes live only when its tenant has nothing
 * queued or being sent (so none is overtaken: per-user order and priorities hold) and the rate
 * windows admit it now, taken in the claim's order (priority first, then acceptance); every other
 * one is queued as before. Its events are the queue's: queued, sending (attempt 1) and sent.
 */
export const RATE_WINDOWS = 'notify.rate_windows';

/** what the accepting transaction may deliver itself: the websocket channel, to a user */
export const mayGoLive = (p: PreparedNotification): boolean =>
  p.channel.type === 'websocket' && p.message.userId !== null;

const candidate = (p: PreparedNotification, limits: { perTenant: number; perModule: number }): RateCandidate => ({
  id: p.id,
  scopes: rateScopes({ tenantId: p.tenantId, module: p.module, rateLimited: p.rateLimited }, limits),
});

/** the rate candidates of notifications that may go live (their windows are locked with the tenants) */
export const liveCandidates = (
  prepared: readonly PreparedNotification[],
  limits: { perTenant: number; perModule: number },
): RateCandidate[] => prepared.filter(mayGoLive).map((p) => candidate(p, limits));

/**
 * Which of the admitted notifications go live, given each tenant's pending count before this
 * transaction and the locked windows: those of tenants with nothing pending, in the claim's order,
 * while the windows have room. Answers them in that order (their buffer order) and the statement
 * recording the windows.
 */
export const chooseLive = (
  prepared: readonly PreparedNotification[],
  pendingBefore: ReadonlyMap<string, number>,
  windows: readonly WindowRow[],
  limits: { perTenant: number; perModule: number },
  now: Date,
): { live: PreparedNotification[]; record: string | null } => {
  const eligible = prepared
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => mayGoLive(p) && (pendingBefore.get(p.tenantId) ?? 0) === 0)
    .sort((a, b) => priorityRank(b.p.priority) - priorityRank(a.p.priority) || a.i - b.i)
    .map(({ p }) => p);
  if (eligible.length === 0) return { live: [], record: null };
  const { admitted, record } = admitLocked(
    RATE_WINDOWS,
    eligible.map((p) => candidate(p, limits)),
    windows,
    now,
  );
  return { live: eligible.filter((p) => admitted.has(p.id)), record };
};

/** a live notification's whole life at once: queued, then attempt 1 started and confirmed */
export const liveAppend = (p: PreparedNotification, now: string): AppendRequest => {
  const commands: NotificationCommand[] = [
    { type: 'Queue', data: queuedData(p) },
    { type: 'StartAttempt', now },
    { type: 'ConfirmDelivery', now, possibleDuplicate: false },
  ];
  let state = notificationDecider.initialState();
  const events: NotificationEvent[] = [];
  for (const command of commands) {
    const decided = notificationDecider.decide(command, state);
    state = fold(notificationDecider, decided, state);
    events.push(...decided);
  }
  return {
    streamId: notificationStream(p.tenantId, p.id),
    expectedVersion: 0,
    events,
    state: { value: state, schema: NotificationAggregate.stateSchema },
  };
};

/** the buffer rows of live notifications (their acceptance order drawn from the queue's sequence) */
export const liveEntries = (live: readonly PreparedNotification[]): BufferEntry[] =>
  live.map((p) => ({
    queuedSeq: null,
    tenantId: p.tenantId,
    userId: p.message.userId!,
    notificationId: p.id,
    payload: socketPayloadOf({
      notificationId: p.id,
      message: p.message,
      priority: p.priority,
      createdAt: p.createdAt,
    }),
  }));
