/**
 * The advisory lock of a subscription: a delivery worker holds it (session level, on its own
 * connection) while it hands a batch to the handler; seek and delete take it in their transaction,
 * so they wait for the batch in flight and the worker reads the new cursors next time.
 */
export const subscriptionLockName = (subscriptionId: string): string => `events.subscription:${subscriptionId}`;
