import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { dataErrors } from './errors';

/**
 * A record of a generated model is an aggregate of its own: its writes are the domain events
 * data.<module>.<model>.created / updated / deleted (platform.data.events) with before and after,
 * which a projection applies to the module's table; the table can be rebuilt from them.
 */
export const RECORD_EVENT = /^data\.([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.(created|updated|deleted)$/;
type Row = Record<string, unknown>;

export const RecordEvent = z.object({
  type: z.string().regex(RECORD_EVENT),
  data: z.object({
    module: z.string(),
    model: z.string(),
    id: z.string(),
    before: z.record(z.string(), z.unknown()).nullable(),
    after: z.record(z.string(), z.unknown()).nullable(),
  }),
});
export type RecordEvent = z.infer<typeof RecordEvent>;

export const recordEventType = (module: string, model: string, verb: 'created' | 'updated' | 'deleted'): string =>
  `data.${module}.${model}.${verb}`;
export const verbOf = (type: string): 'created' | 'updated' | 'deleted' =>
  RECORD_EVENT.exec(type)![3] as 'created' | 'updated' | 'deleted';

export type RecordState = { exists: false } | { exists: true; row: Row };
export interface RecordRef {
  module: string;
  model: string;
  id: string;
}
export type RecordCommand =
  | { type: 'CreateRecord'; ref: RecordRef; values: Row }
  | { type: 'UpdateRecord'; ref: RecordRef; changes: Row }
  | { type: 'DeleteRecord'; ref: RecordRef };

export const recordDecider: Decider<RecordState, RecordCommand, RecordEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (_s, e) => {
    const verb = verbOf(e.type);
    return verb === 'deleted' ? { exists: false } : { exists: true, row: e.data.after ?? {} };
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'CreateRecord':
        if (s.exists) throw dataErrors.recordExists();
        return [
          {
            type: recordEventType(c.ref.module, c.ref.model, 'created'),
            data: { ...c.ref, before: null, after: c.values },
          },
        ];
      case 'UpdateRecord': {
        if (!s.exists) throw dataErrors.recordNotFound();
        const after = { ...s.row, ...c.changes };
        return [
          { type: recordEventType(c.ref.module, c.ref.model, 'updated'), data: { ...c.ref, before: s.row, after } },
        ];
      }
      case 'DeleteRecord':
        if (!s.exists) throw dataErrors.recordNotFound();
        return [
          {
            type: recordEventType(c.ref.module, c.ref.model, 'deleted'),
            data: { ...c.ref, before: s.row, after: null },
          },
        ];
      default:
        return assertNever(c);
    }
  },
};
