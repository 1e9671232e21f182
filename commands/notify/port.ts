import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Kernel } from '../../infra/kernel';
import { systemMeta } from '../../infra/kernel';
import type { NotificationPort, PlatformNotification } from '../../infra/notifications';
import type { SendRequest } from './compose';
import { composeNotifications } from './compose';
import { notifyContext } from './context';
import { acceptorOf } from './queue';

/** the kernel's notification port as a request of the service */
export const portRequest = (n: PlatformNotification): SendRequest => ({
  channel: n.channel ?? 'email',
  recipient: n.recipient,
  format: 'text',
  priority: n.priority ?? 'normal',
  ...(n.subject === undefined ? {} : { subject: n.subject }),
  ...(n.body === undefined ? {} : { body: n.body }),
  ...(n.html === undefined ? {} : { html: n.html }),
  ...(n.templateId === undefined ? {} : { templateId: n.templateId }),
  variables: n.variables ?? {},
  meta: {},
  ...(n.headers === undefined ? {} : { headers: n.headers }),
  module: n.module,
  purpose: n.purpose,
});

/**
 * Installs the notification service behind kernel.notifications: the platform's own messages are
 * queued like any other (retries, priorities, history, the mail headers kept) instead of going
 * straight to the mail port. Installed by every role that runs notify's plugins or workers.
 */
export const installNotifyPort = (kernel: Kernel): void => {
  if (kernel.notifications.kind === 'notify') return;
  const port: NotificationPort = {
    kind: 'notify',
    async send(n) {
      const tenantId = n.tenantId ?? PLATFORM_TENANT_ID;
      const [prepared] = await composeNotifications(kernel, notifyContext(kernel), tenantId, [portRequest(n)]);
      const [accepted] = await acceptorOf(kernel).submit(systemMeta(tenantId), [prepared!]);
      return { notificationId: accepted!.notificationId };
    },
  };
  kernel.notifications = port;
};
