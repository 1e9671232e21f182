import { ERASURE_RULES } from '../../domain/shared/erasure';
import type { Eraser } from '../../infra/erasure';

/**
 * Money's rule (README, Termination): nothing is erased — wallets, their streams and the journal
 * are money records kept for accounting. The wallets are frozen by the termination itself: every
 * money mutation of a terminated tenant is refused (domain/money/limits.ts), and after completion
 * the tenant can never be recovered, so they stay frozen. Money confirms the phase so that billing
 * knows it has looked.
 */
export const moneyEraser: Eraser = {
  domain: 'money',
  phase: ERASURE_RULES.money,
  erase: () => Promise.resolve(),
};
