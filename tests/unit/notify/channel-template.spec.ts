import { describe, expect, it } from 'vitest';
import type { ChannelCommand } from '../../../domain/notify/channel';
import { channelDecider, REDACTED, redactConfig, secretsOf } from '../../../domain/notify/channel';
import type { TemplateCommand } from '../../../domain/notify/template';
import { templateDecider } from '../../../domain/notify/template';
import { commandScenario } from '../../support/decider-scenario';

const T0 = '2026-01-10T12:00:00.000Z';

describe('a channel', () => {
  const { given } = commandScenario(channelDecider);
  const register = (name = 'pager'): ChannelCommand => ({
    type: 'RegisterChannel',
    data: { channelId: 'c1', name, type: 'webhook', iconUrl: null, config: { url: 'https://x' }, registeredAt: T0 },
  });
  it('is registered once: notify.channel.registered with the given data', () =>
    given()
      .when(register())
      .then((events, after) => {
        expect(events).toEqual([{ type: 'notify.channel.registered', data: register().data }]);
        expect(after).toEqual({ status: 'active', channelId: 'c1', name: 'pager', type: 'webhook' });
      }));
  it('registered again changes nothing', () => given(register()).when(register('other')).then([]));
  it('its config is published with every secret redacted, and the secrets kept apart', () => {
    const config = { url: 'https://x', signingKey: 'k', apiKey: 'a', smtp_url: 'smtp://u:p@h' };
    expect(redactConfig(config, ['signingKey'])).toEqual({
      url: 'https://x',
      signingKey: REDACTED,
      apiKey: REDACTED,
      smtp_url: REDACTED,
    });
    expect(secretsOf(config, ['signingKey'])).toEqual({ signingKey: 'k', apiKey: 'a', smtp_url: 'smtp://u:p@h' });
  });
});

describe('a template', () => {
  const { given } = commandScenario(templateDecider);
  const create = (name = 'welcome'): TemplateCommand => ({
    type: 'CreateTemplate',
    data: {
      templateId: 'tp1',
      name,
      channel: 'email',
      subject: 'Hi {{name}}',
      body: 'Welcome, {{name}}',
      format: 'text',
      variables: ['name'],
      createdAt: T0,
    },
  });
  it('is created once: notify.template.created with the given data', () =>
    given()
      .when(create())
      .then((events, after) => {
        expect(events).toEqual([{ type: 'notify.template.created', data: create().data }]);
        expect(after).toEqual({ status: 'active', templateId: 'tp1', name: 'welcome' });
      }));
  it('created again changes nothing', () => given(create()).when(create('other')).then([]));
});
