import { commonErrors } from '../../domain/shared/errors';
import type { TemplateFormat } from '../../domain/notify/events';
import { notifyErrors } from '../../domain/notify/errors';
import { declaredVariables, hasControlCharacters } from '../../domain/notify/template';
import { isBuiltInChannel } from '../../domain/notify/channel';
import type { TemplateView } from '../../domain/notify/views';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { TemplateAggregate, templateStream } from './aggregates';
import type { NotifyContext } from './context';
import { findChannel, templateNameTaken } from './lookups';

export interface CreateTemplateInput {
  name: string;
  channel: string;
  subject: string;
  body: string;
  format: TemplateFormat;
  variables?: string[];
}

/** a template: its variables are declared (or taken from its {{placeholders}}); names are unique per tenant */
export const createTemplate = async (
  uow: UnitOfWork,
  ctx: NotifyContext,
  input: CreateTemplateInput,
): Promise<TemplateView> => {
  const tenantId = uow.meta.tenantId;
  if (hasControlCharacters(input.subject))
    throw commonErrors.validation([
      {
        field: 'subject',
        message: 'a subject is one line: no line breaks or control characters',
        code: 'INVALID_SUBJECT',
      },
    ]);
  const channel = isBuiltInChannel(input.channel)
    ? input.channel.toLowerCase()
    : (await findChannel(uow.tx, tenantId, input.channel))?.name;
  if (!channel) throw notifyErrors.channelNotFound(input.channel);
  const variables = declaredVariables(input.subject, input.body, input.variables);
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `notify.template-name:${tenantId}:${input.name.toLowerCase()}`,
  ]);
  if (await templateNameTaken(uow.tx, tenantId, input.name)) throw notifyErrors.templateNameTaken(input.name);
  const templateId = ctx.ids.next();
  const createdAt = ctx.clock.now().toISOString();
  const data = {
    templateId,
    name: input.name,
    channel,
    subject: input.subject,
    body: input.body,
    format: input.format,
    variables,
    createdAt,
  };
  uow.decide(TemplateAggregate, await uow.load(TemplateAggregate, templateStream(tenantId, templateId)), {
    type: 'CreateTemplate',
    data,
  });
  return {
    id: templateId,
    name: data.name,
    channel,
    subject: data.subject,
    body: data.body,
    format: data.format,
    variables,
    createdAt,
  };
};
