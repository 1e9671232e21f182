import { MAX_AMOUNT } from './amount';
import { moneyErrors } from './errors';

/** The plan's money limits, in cents; 0 means unlimited (billing's convention). */
export interface PlanLimits {
  maxTxAmount: bigint;
  maxBalance: bigint;
}

/** spec ruling: the defaults while billing has none */
export const DEFAULT_PLAN_LIMITS: PlanLimits = { maxTxAmount: 10_000_000n, maxBalance: 100_000_000n };

export const checkTxAmount = (amount: bigint, limits: PlanLimits): void => {
  if (limits.maxTxAmount > 0n && amount > limits.maxTxAmount)
    throw moneyErrors.planLimitExceeded('maxTxAmount', limits.maxTxAmount);
};

/** the wallet's total after receiving amount must stay within the plan (and within bigint) */
export const checkBalanceAfter = (total: bigint, limits: PlanLimits): void => {
  if (limits.maxBalance > 0n && total > limits.maxBalance)
    throw moneyErrors.planLimitExceeded('maxBalance', limits.maxBalance);
  if (total > MAX_AMOUNT) throw moneyErrors.planLimitExceeded('maxBalance', MAX_AMOUNT);
};

/** Operations a suspended subscription keeps (spec 002 Authentication; document 001 gateway rule 2). */
export type MoneyOperation = 'open' | 'credit' | 'debit' | 'hold' | 'confirm' | 'cancel' | 'transfer' | 'reversal';
export type SubscriptionStatus = 'trialing' | 'active' | 'past_due' | 'suspended' | 'terminated' | 'canceled';
const ALLOWED_WHILE_SUSPENDED: ReadonlySet<MoneyOperation> = new Set([
  'debit',
  'transfer',
  'hold',
  'confirm',
  'cancel',
]);

export const checkSubscription = (status: SubscriptionStatus, operation: MoneyOperation): void => {
  if (status === 'terminated' || status === 'canceled') throw moneyErrors.subscriptionSuspended();
  if (status === 'suspended' && !ALLOWED_WHILE_SUSPENDED.has(operation)) throw moneyErrors.subscriptionSuspended();
};
