import { fold } from '../../domain/shared/decider';
import { moneyErrors } from '../../domain/money/errors';
import type { WalletEvent } from '../../domain/money/events';
import { legOf, legView } from '../../domain/money/history';
import type { MoneyOperation, PlanLimits } from '../../domain/money/limits';
import { checkSubscription } from '../../domain/money/limits';
import { reversalLegs } from '../../domain/money/reversal';
import type { TransactionView, WalletView } from '../../domain/money/views';
import { balanceView } from '../../domain/money/views';
import type { Wallet } from '../../domain/money/wallet';
import { decideTransfer, walletDecider } from '../../domain/money/wallet';
import type { Loaded, UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { ReversalAggregate, reversalStream, WalletAggregate, walletStream } from './aggregates';
import type { MoneyContext } from './context';
import { findTransaction, holdOutcome, userHasWallet } from './lookups';

/** what every movement request carries besides its amount */
export interface MovementRequest {
  amount: bigint;
  currency: string;
  reason: string;
  /** the JSON text of the client's object, as sent */
  meta: string;
  idempotencyKey: string | null;
}

const nowOf = (ctx: MoneyContext): string => ctx.clock.now().toISOString();

/** the subscription hook, then the plan limits (read before any lock is taken) */
const admit = async (uow: UnitOfWork, ctx: MoneyContext, operation: MoneyOperation): Promise<PlanLimits> => {
  checkSubscription(await subscriptionOf(uow, ctx), operation);
  const tenantId = uow.meta.tenantId;
  return uow.once(`money.limits:${tenantId}`, () => ctx.limits.get(tenantId));
};

/** once per transaction: a batch of a tenant's movements asks billing's ports once */
const subscriptionOf = (uow: UnitOfWork, ctx: MoneyContext) =>
  uow.once(`money.subscription:${uow.meta.tenantId}`, () => ctx.subscriptions.statusOf(uow.meta.tenantId));

const firstLeg = (events: WalletEvent[]): TransactionView => {
  const leg = events.map(legOf).find((l) => l?.leg === 'primary') ?? events.map(legOf).find((l) => l !== null);
  if (!leg) throw new Error('a movement produced no history line');
  return legView(leg);
};

const lockWallet = (uow: UnitOfWork, walletId: string): Promise<Loaded<Wallet>> =>
  uow.load(WalletAggregate, walletStream(uow.meta.tenantId, walletId), { lock: true });

/** locks wallets in ascending id order (spec 002 rule 5), so two transactions never wait on each other in a cycle */
const lockWallets = async (uow: UnitOfWork, walletIds: string[]): Promise<Map<string, Loaded<Wallet>>> => {
  const byStream = await uow.loadMany(
    WalletAggregate,
    walletIds.map((id) => walletStream(uow.meta.tenantId, id)),
    { lock: true },
  );
  return new Map(walletIds.map((id) => [id, byStream.get(walletStream(uow.meta.tenantId, id))!]));
};

export const walletView = (w: Wallet, tenantId: string, updatedAt: string): WalletView => {
  if (w.status !== 'open') throw moneyErrors.walletNotFound();
  return {
    id: w.walletId,
    tenantId,
    userId: w.userId,
    currency: w.currency,
    label: w.label,
    balance: balanceView(w.balance),
    createdAt: w.createdAt,
    updatedAt,
  };
};

export const openWallet = async (
  uow: UnitOfWork,
  ctx: MoneyContext,
  input: { userId: string; currency: string; label: string },
): Promise<WalletView> => {
  const tenantId = uow.meta.tenantId;
  checkSubscription(await subscriptionOf(uow, ctx), 'open');
  // the owner must be an active member of the tenant: one answer for unknown, foreign and deleted users
  if (!(await ctx.members.isActiveMember(uow.tx, tenantId, input.userId))) throw moneyErrors.userNotFound();
  // one wallet per user and currency: serialize the creators of the pair, then look
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `money.wallet-owner:${tenantId}:${input.userId}:${input.currency}`,
  ]);
  const ownerHasWallet = await userHasWallet(uow.tx, tenantId, input.userId, input.currency);
  const walletId = ctx.ids.next();
  const now = nowOf(ctx);
  const wallet = await uow.load(WalletAggregate, walletStream(tenantId, walletId));
  const { state } = uow.decide(WalletAggregate, wallet, {
    type: 'OpenWallet',
    walletId,
    ...input,
    now,
    ownerHasWallet,
  });
  return walletView(state, tenantId, now);
};

/** a credit or a debit: one leg on one wallet, admitted by the tenant's limits */
const movement =
  (type: 'Credit' | 'Debit') =>
  async (uow: UnitOfWork, ctx: MoneyContext, walletId: string, r: MovementRequest): Promise<TransactionView> => {
    const limits = await admit(uow, ctx, type === 'Credit' ? 'credit' : 'debit');
    const wallet = await lockWallet(uow, walletId);
    const { events } = uow.decide(WalletAggregate, wallet, {
      type,
      walletId,
      transactionId: ctx.ids.next(),
      now: nowOf(ctx),
      limits,
      ...r,
    });
    return firstLeg(events);
  };

export const credit = movement('Credit');
export const debit = movement('Debit');

/** when a hold slot frees itself at the latest: the earliest expiry among the wallet's active holds (at least 1 s) */
const secondsUntilFirstExpiry = (w: Wallet, now: Date): number => {
  if (w.status !== 'open') return 1;
  const first = Math.min(...Object.values(w.holds).map((h) => Date.parse(h.expiresAt)));
  return Number.isFinite(first) ? Math.max(1, Math.ceil((first - now.getTime()) / 1000)) : 1;
};

export const placeHold = async (
  uow: UnitOfWork,
  ctx: MoneyContext,
  walletId: string,
  r: MovementRequest & { ttlMs: number | null },
): Promise<TransactionView> => {
  const limits = await admit(uow, ctx, 'hold');
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + (r.ttlMs ?? ctx.settings.holdTtlDefaultMs)).toISOString();
  const wallet = await lockWallet(uow, walletId);
  const { ttlMs: _ttl, ...movement } = r;
  const { events } = uow.decide(WalletAggregate, wallet, {
    type: 'PlaceHold',
    walletId,
    transactionId: ctx.ids.next(),
    now: now.toISOString(),
    limits,
    expiresAt,
    maxHolds: ctx.settings.maxHoldsPerWallet,
    slotFreeInSeconds: secondsUntilFirstExpiry(wallet.state, now),
    ...movement,
  });
  return firstLeg(events);
};

export const resolveHold = async (
  uow: UnitOfWork,
  ctx: MoneyContext,
  kind: 'ConfirmHold' | 'CancelHold',
  holdId: string,
  r: { reason: string; meta: string; idempotencyKey: string | null },
): Promise<TransactionView> => {
  const tenantId = uow.meta.tenantId;
  checkSubscription(await subscriptionOf(uow, ctx), kind === 'ConfirmHold' ? 'confirm' : 'cancel');
  const hold = await findTransaction(uow.tx, tenantId, holdId);
  if (!hold || hold.type !== 'hold') throw moneyErrors.holdNotFound();
  const wallet = await lockWallet(uow, hold.walletId);
  const active = wallet.state.status === 'open' && holdId in wallet.state.holds;
  // read again under the lock: how the hold ended only chooses the refusal
  const previously = active ? null : holdOutcome(await findTransaction(uow.tx, tenantId, holdId));
  const { events } = uow.decide(WalletAggregate, wallet, {
    type: kind,
    walletId: hold.walletId,
    holdId,
    transactionId: ctx.ids.next(),
    now: nowOf(ctx),
    previously,
    ...r,
  });
  return firstLeg(events);
};

/** the worker's step for one due hold; [] (nothing) when it was resolved meanwhile */
export const expireHold = async (
  uow: UnitOfWork,
  ctx: MoneyContext,
  walletId: string,
  holdId: string,
): Promise<boolean> => {
  const wallet = await lockWallet(uow, walletId);
  const { events } = uow.decide(WalletAggregate, wallet, {
    type: 'ExpireHold',
    walletId,
    holdId,
    transactionId: ctx.ids.next(),
    now: nowOf(ctx),
    tenantId: uow.meta.tenantId,
  });
  return events.length > 0;
};

export interface TransferRequest extends MovementRequest {
  fromWalletId: string;
  toWalletId: string;
}

export const transfer = async (
  uow: UnitOfWork,
  ctx: MoneyContext,
  r: TransferRequest,
): Promise<TransactionView & { fromWalletId: string; toWalletId: string }> => {
  if (r.fromWalletId === r.toWalletId) throw moneyErrors.selfTransfer();
  const limits = await admit(uow, ctx, 'transfer');
  const wallets = await lockWallets(uow, [r.fromWalletId, r.toWalletId]);
  const from = wallets.get(r.fromWalletId)!;
  const to = wallets.get(r.toWalletId)!;
  const decision = decideTransfer(
    { ...r, transactionId: ctx.ids.next(), now: nowOf(ctx), limits },
    from.state,
    to.state,
  );
  uow.record(WalletAggregate, from, decision.from, fold(walletDecider, decision.from, from.state));
  uow.record(WalletAggregate, to, decision.to, fold(walletDecider, decision.to, to.state));
  return { ...firstLeg(decision.from), fromWalletId: r.fromWalletId, toWalletId: r.toWalletId };
};

/**
 * A reversal: the original's facts from the history, its wallets locked in ascending order, the
 * guard stream created once (a concurrent second reversal conflicts, is retried and refused),
 * then the counter-movement on each wallet.
 */
export const reverse = async (
  uow: UnitOfWork,
  ctx: MoneyContext,
  transactionId: string,
  r: { reason: string; meta: string; idempotencyKey: string | null },
): Promise<TransactionView> => {
  const tenantId = uow.meta.tenantId;
  const limits = await admit(uow, ctx, 'reversal');
  let found = await findTransaction(uow.tx, tenantId, transactionId);
  // the confirm of a hold stands for the captured hold: reversing it refunds the hold
  if (found?.type === 'confirm' && found.referenceTransactionId)
    found = await findTransaction(uow.tx, tenantId, found.referenceTransactionId);
  if (!found) throw moneyErrors.transactionNotFound();
  const wallets = await lockWallets(uow, [
    found.walletId,
    ...(found.counterpartyWalletId ? [found.counterpartyWalletId] : []),
  ]);
  const original = (await findTransaction(uow.tx, tenantId, found.id)) ?? found;
  const reversalId = ctx.ids.next();
  const now = nowOf(ctx);
  const guard = await uow.load(ReversalAggregate, reversalStream(tenantId, original.id));
  const maxAgeDays = ctx.settings.reversalMaxAgeDays;
  const oldestReversible = new Date(Date.parse(now) - maxAgeDays * 86_400_000).toISOString();
  uow.decide(ReversalAggregate, guard, {
    type: 'Reverse',
    original,
    reversalTransactionId: reversalId,
    now,
    oldestReversible,
    maxAgeDays,
  });
  const events: WalletEvent[] = [];
  for (const leg of reversalLegs(original)) {
    const wallet = wallets.get(leg.walletId);
    if (!wallet) throw moneyErrors.walletNotFound();
    events.push(
      ...uow.decide(WalletAggregate, wallet, {
        type: 'ApplyReversal',
        walletId: leg.walletId,
        transactionId: reversalId,
        amount: original.amount,
        currency: original.currency,
        now,
        limits,
        originalTransactionId: original.id,
        originalCreatedAt: original.createdAt,
        originalType: original.type,
        direction: leg.direction,
        counterpartyWalletId: leg.counterpartyWalletId,
        ...r,
      }).events,
    );
  }
  return firstLeg(events);
};
