import { defineErrors } from '../shared/errors';

/**
 * The money catalog (spec 002, Errors/Money, with the rulings: insufficient-funds 400,
 * hold-limit-exceeded 429, plan-limit-exceeded 402). idempotency-conflict 409 is raised by the kernel.
 */
export const moneyErrors = defineErrors({
  invalidAmount: (detail = 'amount must be an integer number of cents from 1 to 9223372036854775807.') => ({
    status: 400,
    suffix: 'invalid-amount',
    title: 'Invalid amount',
    detail,
    errors: [{ field: 'amount', message: detail, code: 'INVALID_AMOUNT' }],
  }),
  insufficientFunds: (available: bigint, requested: bigint) => ({
    status: 400,
    suffix: 'insufficient-funds',
    title: 'Insufficient funds',
    detail: `The available balance (${available}) is below the amount (${requested}).`,
    extensions: { available: available.toString(), requested: requested.toString() },
  }),
  /** like every 429: Retry-After and retryAfter, here the time until the first active hold expires (a confirm or cancel frees a slot sooner) */
  holdLimitExceeded: (max: number, retryAfterSeconds: number) => ({
    status: 429,
    suffix: 'hold-limit-exceeded',
    title: 'Too many holds',
    detail: `The wallet has ${max} active holds already; confirm or cancel one first, or retry after ${retryAfterSeconds} s when the first one expires.`,
    extensions: { maxHolds: max, retryAfter: retryAfterSeconds },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  }),
  planLimitExceeded: (limit: 'maxTxAmount' | 'maxBalance', max: bigint) => ({
    status: 402,
    suffix: 'plan-limit-exceeded',
    title: 'Plan limit exceeded',
    detail:
      limit === 'maxTxAmount'
        ? `The amount exceeds the plan's maximum single transaction of ${max} cents.`
        : `The resulting balance would exceed the plan's maximum wallet balance of ${max} cents.`,
    extensions: { code: 'LIMIT_EXCEEDED', limit, max: max.toString() },
  }),
  billingUnavailable: () => ({
    status: 503,
    suffix: 'billing-unavailable',
    title: 'Billing unavailable',
    detail: 'The plan limits cannot be read right now; the request was not executed. Retry later.',
    extensions: { code: 'LIMITS_UNAVAILABLE' },
    headers: { 'Retry-After': '5' },
  }),
  subscriptionSuspended: () => ({
    status: 402,
    suffix: 'subscription-suspended',
    title: 'Subscription suspended',
    detail: 'The subscription is suspended: only debit, transfer, hold, confirm and cancel are allowed.',
  }),
  userNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The user is not an active member of this tenant.',
  }),
  walletNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The wallet does not exist.',
  }),
  transactionNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The transaction does not exist.',
  }),
  holdNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The hold does not exist.' }),
  duplicateWallet: (userId: string, currency: string) => ({
    status: 409,
    suffix: 'duplicate-wallet',
    title: 'Wallet exists',
    detail: `User ${userId} has a ${currency} wallet already.`,
  }),
  currencyMismatch: (expected: string, got: string) => ({
    status: 400,
    suffix: 'currency-mismatch',
    title: 'Currency mismatch',
    detail: `The wallet holds ${expected}; the request names ${got}.`,
    errors: [{ field: 'currency', message: `must be ${expected}`, code: 'CURRENCY_MISMATCH' }],
  }),
  selfTransfer: () => ({
    status: 400,
    suffix: 'self-transfer',
    title: 'Transfer to itself',
    detail: 'A wallet cannot transfer to itself.',
  }),
  emailNotVerified: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail: 'Money transfers require a verified email address.',
    extensions: { code: 'EMAIL_NOT_VERIFIED' },
  }),
  holdExpired: () => ({
    status: 422,
    suffix: 'hold-expired',
    title: 'Hold expired',
    detail: 'The hold has expired; its funds returned to the available balance.',
  }),
  holdAlreadyResolved: (status: string) => ({
    status: 409,
    suffix: 'hold-already-resolved',
    title: 'Hold already resolved',
    detail: `The hold is ${status} already; a hold resolves once.`,
  }),
  reversalWindowExpired: (maxDays: number) => ({
    status: 400,
    suffix: 'reversal-window-expired',
    title: 'Reversal window expired',
    detail: `Only transactions at most ${maxDays} days old can be reversed.`,
  }),
  doubleReversal: () => ({
    status: 400,
    suffix: 'double-reversal',
    title: 'Already reversed',
    detail: 'The transaction was reversed already.',
  }),
  holdNotReversible: () => ({
    status: 400,
    suffix: 'hold-not-reversible',
    title: 'Hold not reversible',
    detail: 'A held transaction cannot be reversed; cancel the hold instead.',
  }),
  notReversible: (why: string) => ({
    status: 400,
    suffix: 'transaction-not-reversible',
    title: 'Transaction not reversible',
    detail: why,
  }),
});
