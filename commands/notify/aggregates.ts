import { streamIdOf } from '../../domain/shared/event';
import { channelDecider } from '../../domain/notify/channel';
import { ChannelEvent, NotificationEvent, TemplateEvent } from '../../domain/notify/events';
import type { Notification } from '../../domain/notify/notification';
import { notificationDecider } from '../../domain/notify/notification';
import { templateDecider } from '../../domain/notify/template';
import { defineAggregate } from '../../infra/eventstore/aggregate';

export const NotificationAggregate = defineAggregate({
  name: 'notify.notification',
  decider: notificationDecider,
  stateSchema: 'notify.notification.v1',
  decode: (json): Notification => json as Notification,
  toEvent: (e) => NotificationEvent.parse(e),
});
export const TemplateAggregate = defineAggregate({
  name: 'notify.template',
  decider: templateDecider,
  stateSchema: 'notify.template.v1',
  toEvent: (e) => TemplateEvent.parse(e),
});
export const ChannelAggregate = defineAggregate({
  name: 'notify.channel',
  decider: channelDecider,
  stateSchema: 'notify.channel.v1',
  toEvent: (e) => ChannelEvent.parse(e),
});

export const notificationStream = (tenantId: string, id: string): string =>
  streamIdOf('notify.notification', tenantId, id);
export const templateStream = (tenantId: string, id: string): string => streamIdOf('notify.template', tenantId, id);
export const channelStream = (tenantId: string, id: string): string => streamIdOf('notify.channel', tenantId, id);
