import type { PlanLimits } from '../../../domain/money/limits';
import { DEFAULT_PLAN_LIMITS } from '../../../domain/money/limits';
import type { WalletCommand } from '../../../domain/money/wallet';
import { walletDecider } from '../../../domain/money/wallet';
import { commandScenario } from '../../support/decider-scenario';

export const W = 'w-1';
export const T0 = '2025-01-01T00:00:00.000Z';
export const limits: PlanLimits = DEFAULT_PLAN_LIMITS;

let seq = 0;
const txId = () => `tx-${++seq}`;

/** wallet histories written as commands (so fixtures are always valid), and given / when / then over them */
export const { history, given } = commandScenario(walletDecider);

export const opened = (currency = 'USD', walletId = W): WalletCommand => ({
  type: 'OpenWallet',
  walletId,
  userId: 'u-1',
  currency,
  label: 'main',
  now: T0,
  ownerHasWallet: false,
});
const movement = (amount: bigint, currency = 'USD') => ({
  walletId: W,
  transactionId: txId(),
  amount,
  currency,
  reason: '',
  meta: '{}',
  idempotencyKey: null,
  now: T0,
  limits,
});
export const credit = (amount: bigint, currency = 'USD'): WalletCommand => ({
  type: 'Credit',
  ...movement(amount, currency),
});
export const debit = (amount: bigint, currency = 'USD'): WalletCommand => ({
  type: 'Debit',
  ...movement(amount, currency),
});
export const hold = (
  amount: bigint,
  id = txId(),
  expiresAt = '2025-01-02T00:00:00.000Z',
  maxHolds = 100,
): WalletCommand => ({
  type: 'PlaceHold',
  ...movement(amount),
  transactionId: id,
  expiresAt,
  maxHolds,
  slotFreeInSeconds: 60,
});
export const confirm = (
  holdId: string,
  now = T0,
  previously: 'confirmed' | 'canceled' | 'expired' | null = null,
): WalletCommand => ({
  type: 'ConfirmHold',
  walletId: W,
  holdId,
  transactionId: txId(),
  reason: '',
  meta: '{}',
  idempotencyKey: null,
  now,
  previously,
});
export const cancel = (
  holdId: string,
  now = T0,
  previously: 'confirmed' | 'canceled' | 'expired' | null = null,
): WalletCommand => ({
  type: 'CancelHold',
  walletId: W,
  holdId,
  transactionId: txId(),
  reason: '',
  meta: '{}',
  idempotencyKey: null,
  now,
  previously,
});
export const expire = (holdId: string, now: string): WalletCommand => ({
  type: 'ExpireHold',
  walletId: W,
  holdId,
  transactionId: txId(),
  now,
  tenantId: 't-1',
});
