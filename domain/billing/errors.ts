import { defineErrors } from '../shared/errors';

/**
 * The billing catalog (spec 001, Errors). Each refusal also has its gRPC status (commands/billing
 * grpc mapping reads `extensions.grpc` when the REST status alone does not decide it).
 */
export const billingErrors = defineErrors({
  planNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The plan does not exist.' }),
  subscriptionNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The subscription does not exist.' }),
  tenantNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The tenant does not exist.' }),
  planNameTaken: (name: string) => ({ status: 409, suffix: 'conflict', title: 'Conflict', detail: `A plan named ${JSON.stringify(name)} exists already.`, extensions: { grpc: 'ALREADY_EXISTS' } }),
  subscriptionExists: () => ({
    status: 409, suffix: 'conflict', title: 'Conflict', detail: 'The tenant has a subscription already; change its plan with PATCH instead.', extensions: { grpc: 'ALREADY_EXISTS' },
  }),
  versionMismatch: (expected: number, current: number) => ({
    status: 409, suffix: 'optimistic-lock-conflict', title: 'Version conflict',
    detail: `The subscription is at version ${current}, not ${expected}: read it again and retry.`, extensions: { grpc: 'ABORTED', currentVersion: current },
  }),
  planChangeInProgress: () => ({
    status: 409, suffix: 'plan-change-in-progress', title: 'Plan change in progress',
    detail: 'A plan change is pending until the end of the period; cancel it (cancel-downgrade) before asking for another.', extensions: { grpc: 'FAILED_PRECONDITION' },
  }),
  invalidTransition: (detail: string) => ({ status: 422, suffix: 'invalid-transition', title: 'Invalid transition', detail, extensions: { grpc: 'FAILED_PRECONDITION' } }),
  planHasSubscribers: () => ({
    status: 422, suffix: 'invalid-transition', title: 'Invalid transition', detail: 'The plan has active subscribers and cannot be deactivated.', extensions: { grpc: 'FAILED_PRECONDITION' },
  }),
  planInactive: () => ({ status: 422, suffix: 'invalid-transition', title: 'Invalid transition', detail: 'The plan is not active; choose an active plan.', extensions: { grpc: 'FAILED_PRECONDITION' } }),
  signatureInvalid: (detail = 'The provider signature is missing or does not match the body.') => ({
    status: 401, suffix: 'webhook-signature-invalid', title: 'Webhook signature invalid', detail, extensions: { grpc: 'PERMISSION_DENIED' },
  }),
  /** REST answers a missing header as any bad signature (401); gRPC lists it under INVALID_ARGUMENT */
  signatureMissing: (header: string) => ({
    status: 401, suffix: 'webhook-signature-invalid', title: 'Webhook signature invalid', detail: `The ${header} header is missing.`, extensions: { grpc: 'INVALID_ARGUMENT' },
  }),
  malformedWebhook: (detail: string) => ({
    status: 400, suffix: 'validation-error', title: 'Validation failed', detail,
    errors: [{ field: 'body', message: detail, code: 'MALFORMED_WEBHOOK' }],
  }),
  unknownProvider: (provider: string) => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: `No webhook provider ${JSON.stringify(provider)} is configured.` }),
  planLimitExceeded: (resource: string, used: number, limit: number) => ({
    status: 402, suffix: 'plan-limit-exceeded', title: 'Plan limit exceeded',
    detail: `The plan allows ${limit} ${resource.replace(/_/g, ' ')}; ${used} are in use.`, extensions: { code: 'LIMIT_EXCEEDED', resource, currentUsage: used, limit },
  }),
  subscriptionSuspended: () => ({
    status: 402, suffix: 'subscription-suspended', title: 'Subscription suspended',
    detail: 'The subscription is suspended for an unpaid invoice: the tenant is read-only until payment is received.',
  }),
  subscriptionTerminated: (status: 'terminated' | 'canceled') => ({
    status: 402, suffix: 'subscription-terminated', title: status === 'canceled' ? 'Subscription canceled' : 'Subscription terminated',
    detail: status === 'canceled' ? 'The subscription was canceled: access is blocked until a plan is chosen again.' : 'The subscription was terminated for an unpaid invoice: access is blocked.',
    extensions: { status },
  }),
  notPlatformOwner: () => ({ status: 403, suffix: 'forbidden', title: 'Forbidden', detail: 'Only the platform owner may do this.' }),
});
