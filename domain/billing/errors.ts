import { defineErrors } from '../shared/errors';

/**
 * The billing catalog (spec 001, Errors). The gRPC statuses of the same refusals are mapped in one
 * place, billingGrpcStatus below.
 */
export const billingErrors = defineErrors({
  planNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The plan does not exist.' }),
  subscriptionNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The subscription does not exist.',
  }),
  tenantNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The tenant does not exist.',
  }),
  /** the gateway could not ask billing and holds no recent answer for the tenant: a mutation is not let through unchecked */
  billingUnavailable: () => ({
    status: 503,
    suffix: 'billing-unavailable',
    title: 'Billing unavailable',
    detail: "The tenant's plan cannot be checked right now; the request was not executed. Retry later.",
    headers: { 'Retry-After': '5' },
  }),
  planNameTaken: (name: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `A plan named ${JSON.stringify(name)} exists already.`,
  }),
  /** a provider's price id names one plan (the webhook maps the price a customer pays to it) */
  providerPriceTaken: (provider: string, priceId: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `The ${provider} price ${JSON.stringify(priceId)} belongs to another plan already.`,
  }),
  subscriptionExists: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'The tenant has a subscription already; change its plan with PATCH instead.',
  }),
  externalIdTaken: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: "The payment provider's subscription id (externalId) belongs to another tenant's subscription.",
  }),
  /** a tenant cannot name the provider subscription whose payments activate it: the provider's webhooks or the platform owner set it */
  externalIdNotAllowed: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail:
      "externalId is set by the payment provider's verified webhooks or by the platform owner, not in this request.",
    extensions: { field: 'externalId' },
  }),
  versionMismatch: (expected: number, current: number) => ({
    status: 409,
    suffix: 'optimistic-lock-conflict',
    title: 'Version conflict',
    detail: `The subscription is at version ${current}, not ${expected}: read it again and retry.`,
    extensions: { currentVersion: current },
  }),
  planChangeInProgress: () => ({
    status: 409,
    suffix: 'plan-change-in-progress',
    title: 'Plan change in progress',
    detail:
      'A plan change is pending until the end of the period; cancel it (cancel-downgrade) before asking for another.',
  }),
  invalidTransition: (detail: string) => ({
    status: 422,
    suffix: 'invalid-transition',
    title: 'Invalid transition',
    detail,
  }),
  planHasSubscribers: () => ({
    status: 422,
    suffix: 'invalid-transition',
    title: 'Invalid transition',
    detail: 'The plan has active subscribers and cannot be deactivated.',
  }),
  planInactive: () => ({
    status: 422,
    suffix: 'invalid-transition',
    title: 'Invalid transition',
    detail: 'The plan is not active; choose an active plan.',
  }),
  signatureInvalid: (detail = 'The provider signature is missing or does not match the body.') => ({
    status: 401,
    suffix: 'webhook-signature-invalid',
    title: 'Webhook signature invalid',
    detail,
  }),
  /** REST answers a missing header as any bad signature (401); gRPC lists it under INVALID_ARGUMENT */
  signatureMissing: (header: string) => ({
    status: 401,
    suffix: 'webhook-signature-invalid',
    title: 'Webhook signature invalid',
    detail: `The ${header} header is missing.`,
    extensions: { code: 'SIGNATURE_MISSING' },
  }),
  malformedWebhook: (detail: string) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail,
    errors: [{ field: 'body', message: detail, code: 'MALFORMED_WEBHOOK' }],
  }),
  unknownProvider: (provider: string) => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: `No webhook provider ${JSON.stringify(provider)} is configured.`,
  }),
  planLimitExceeded: (resource: string, used: number, limit: number) => ({
    status: 402,
    suffix: 'plan-limit-exceeded',
    title: 'Plan limit exceeded',
    detail: `The plan allows ${limit} ${resource.replace(/_/g, ' ')}; ${used} are in use.`,
    extensions: { code: 'LIMIT_EXCEEDED', resource, currentUsage: used, limit },
  }),
  subscriptionSuspended: () => ({
    status: 402,
    suffix: 'subscription-suspended',
    title: 'Subscription suspended',
    detail: 'The subscription is suspended for an unpaid invoice: the tenant is read-only until payment is received.',
  }),
  subscriptionTerminated: (status: 'terminated' | 'canceled') => ({
    status: 402,
    suffix: 'subscription-terminated',
    title: status === 'canceled' ? 'Subscription canceled' : 'Subscription terminated',
    detail:
      status === 'canceled'
        ? 'The subscription was canceled: access is blocked until a plan is chosen again.'
        : 'The subscription was terminated for an unpaid invoice: access is blocked.',
    extensions: { status },
  }),
  notPlatformOwner: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail: 'Only the platform owner may do this.',
  }),
});

/**
 * spec 001's gRPC statuses for billing's refusals: ABORTED for a stale version (the caller re-reads
 * and retries), FAILED_PRECONDITION for a state that forbids the change, PERMISSION_DENIED for a
 * bad signature but INVALID_ARGUMENT for a missing one, ALREADY_EXISTS for a conflict; null: decided
 * by the HTTP status (infra/grpc).
 */
export const billingGrpcStatus = (suffix: string, status: number, code: unknown): string | null => {
  switch (suffix) {
    case 'optimistic-lock-conflict':
      return 'ABORTED';
    case 'plan-change-in-progress':
    case 'invalid-transition':
      return 'FAILED_PRECONDITION';
    case 'webhook-signature-invalid':
      return code === 'SIGNATURE_MISSING' ? 'INVALID_ARGUMENT' : 'PERMISSION_DENIED';
    case 'conflict':
      return status === 409 ? 'ALREADY_EXISTS' : null;
    default:
      return null;
  }
};
