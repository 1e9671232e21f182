import { z } from 'zod';
import { streamIdOf } from '../../domain/shared/event';
import { Balance, Cents } from '../../domain/money/amount';
import { ReversalEvent, WalletEvent } from '../../domain/money/events';
import type { ReversalGuard } from '../../domain/money/reversal';
import { reversalDecider } from '../../domain/money/reversal';
import type { Wallet } from '../../domain/money/wallet';
import { walletDecider } from '../../domain/money/wallet';
import { defineAggregate } from '../../infra/eventstore/aggregate';

const WalletState = z.discriminatedUnion('status', [
  z.object({ status: z.literal('none') }),
  z.object({
    status: z.literal('open'),
    walletId: z.string(),
    userId: z.string(),
    currency: z.string(),
    label: z.string(),
    createdAt: z.string(),
    balance: Balance,
    holds: z.record(z.string(), z.object({ amount: Cents, expiresAt: z.string(), createdAt: z.string() })),
  }),
]);

/** the state beside the stream holds bigints: stored as decimal strings (the store's replacer), parsed back here */
export const WalletAggregate = defineAggregate({
  name: 'money.wallet',
  decider: walletDecider,
  stateSchema: 'money.wallet.v1',
  decode: (json): Wallet => WalletState.parse(json),
  toEvent: (e) => WalletEvent.parse(e),
});

export const ReversalAggregate = defineAggregate({
  name: 'money.reversal',
  decider: reversalDecider,
  stateSchema: 'money.reversal.v1',
  decode: (json): ReversalGuard => json as ReversalGuard,
  toEvent: (e) => ReversalEvent.parse(e),
});

export const walletStream = (tenantId: string, walletId: string): string =>
  streamIdOf('money.wallet', tenantId, walletId);
export const reversalStream = (tenantId: string, transactionId: string): string =>
  streamIdOf('money.reversal', tenantId, transactionId);
