import type { Queryable } from '../../infra/postgres/db';

export interface IncomingWebhook {
  provider: string;
  eventId: string;
  eventType: string;
  payload: Buffer;
  receivedAt: Date;
}

interface Waiting extends IncomingWebhook {
  resolve: (stored: boolean) => void;
  reject: (error: unknown) => void;
}

const MAX_BATCH = 256;

/**
 * Durable intake of verified webhooks: deliveries arriving together are stored by one multi-row
 * INSERT … ON CONFLICT DO NOTHING, one commit for all of them (the commit's flush is the cost of a
 * delivery), each answered once its batch has committed. A delivery arriving alone is written at
 * once (the next turn of the event loop). Each answer says whether this delivery stored the event:
 * the first delivery of an event id is true, every other one — later, or in the same batch — false.
 */
export class WebhookIntake {
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(private readonly db: Queryable) {}

  store(webhook: IncomingWebhook): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.queue.push({ ...webhook, resolve, reject });
      if (this.queue.length >= MAX_BATCH) void this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue.splice(0, MAX_BATCH);
    if (this.queue.length && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => void this.flush());
    }
    if (batch.length === 0) return;
    const values: unknown[] = [];
    const rows = batch.map((w) => {
      values.push(w.provider, w.eventId, w.eventType, w.payload, w.receivedAt);
      const n = values.length;
      return `($${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}::bytea, $${n}::timestamptz)`;
    });
    try {
      const { rows: inserted } = await this.db.query<{ provider: string; event_id: string }>(
        `INSERT INTO billing.webhook_events (provider, event_id, event_type, payload, received_at) VALUES ${rows.join(', ')}
         ON CONFLICT (provider, event_id) DO NOTHING RETURNING provider, event_id`,
        values,
      );
      const fresh = new Set(inserted.map((r) => `${r.provider}\u0000${r.event_id}`));
      for (const w of batch) {
        const key = `${w.provider}\u0000${w.eventId}`;
        // the first delivery of a new event in the batch takes it; its twins are replays
        w.resolve(fresh.delete(key));
      }
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
