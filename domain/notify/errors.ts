import { defineErrors } from '../shared/errors';

/** The notification catalog (spec 002, Errors/Notification), plus not-found and conflicts in the platform's common form. */
export const notifyErrors = defineErrors({
  channelNotFound: (channel: string) => ({
    status: 404,
    suffix: 'channel-not-found',
    title: 'Channel not found',
    detail: `No channel named ${JSON.stringify(channel.slice(0, 100))} is installed or registered for this tenant.`,
  }),
  batchLimitExceeded: (max: number, given: number) => ({
    status: 400,
    suffix: 'batch-limit-exceeded',
    title: 'Batch limit exceeded',
    detail: `A batch holds at most ${max} recipients; ${given} were given.`,
    extensions: { max, given },
  }),
  templateNotFound: () => ({
    status: 404,
    suffix: 'template-not-found',
    title: 'Template not found',
    detail: 'The template does not exist.',
  }),
  templateVariableMissing: (missing: string[], field = 'variables') => ({
    status: 400,
    suffix: 'template-variable-missing',
    title: 'Template variable missing',
    detail: `The template declares variables that were not supplied: ${missing.join(', ')}.`,
    errors: missing.map((name) => ({
      field: `${field}.${name}`,
      message: 'is declared by the template and must be supplied',
      code: 'VARIABLE_MISSING',
    })),
    extensions: { missing },
  }),
  notificationNotFailed: (status: string) => ({
    status: 400,
    suffix: 'notification-not-failed',
    title: 'Notification not failed',
    detail: `Only a failed notification can be retried; this one is ${status}.`,
    extensions: { notificationStatus: status },
  }),
  queueFull: (max: number) => ({
    status: 503,
    suffix: 'queue-full',
    title: 'Queue full',
    detail: `The tenant has ${max} notifications waiting for delivery, the most it may queue; retry once some are delivered.`,
    extensions: { max, retryAfter: 60 },
    headers: { 'Retry-After': '60' },
  }),
  notificationNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The notification does not exist.',
  }),
  recipientNotFound: (fields: string[]) => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The recipient is not an active member of this tenant.',
    errors: fields.map((field) => ({
      field,
      message: 'is not an active member of this tenant',
      code: 'UNKNOWN_RECIPIENT',
    })),
  }),
  templateNameTaken: (name: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `A template named ${JSON.stringify(name)} exists already.`,
  }),
  channelNameTaken: (name: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `A channel named ${JSON.stringify(name)} exists already.`,
  }),
});

/** the real-time socket answers plain HTTP with this (a WebSocket upgrade is required) */
export const socketErrors = defineErrors({
  upgradeRequired: () => ({
    status: 426,
    suffix: 'upgrade-required',
    title: 'Upgrade required',
    detail:
      'This is the real-time socket: connect with a WebSocket client (Upgrade: websocket) and send {"type": "auth", "token": …} first.',
    headers: { Upgrade: 'websocket', Connection: 'Upgrade' },
  }),
});
