import type { Entry } from './events';

/** ledger accounts: a wallet's two buckets and the tenant's outside-world account per currency */
export const availableAccount = (walletId: string): string => `wallet:${walletId}:available`;
export const frozenAccount = (walletId: string): string => `wallet:${walletId}:frozen`;
/** credits and debits from outside go against it; it may go negative and is never balance-checked */
export const systemAccount = (currency: string): string => `system:${currency}`;

export const entry = (account: string, amount: bigint): Entry => ({ account, amount });

/** the sum of entries (zero for every transaction) */
export const sumEntries = (entries: readonly Entry[]): bigint => entries.reduce((s, e) => s + e.amount, 0n);
