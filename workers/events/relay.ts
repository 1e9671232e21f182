import type { Kernel } from '../../infra/kernel';
import type { OutgoingRecord } from '../../infra/log/port';
import type { Tx } from '../../infra/postgres/db';
import { topicSpecOf } from '../../commands/events/subscriptions';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

interface StagedRow {
  position: string;
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
  ts: Date;
}

const LEADER_LOCK = 'events-relay';

/**
 * The bus relay: publishes what POST /events/publish(/batch) staged in events.outbox (and the dead
 * letters of platform.<domain>.dlq) to the log, in transaction order, then deletes it — the
 * kernel's outbox relay (workers/outbox-relay.ts) for the bus's own table. Rows of transactions
 * still running are invisible to it, so none is ever skipped; while the log is down it retries the
 * same rows, and a crash between publish and delete publishes them again (receivers deduplicate by
 * eventId). One relay per database publishes at a time (a session advisory lock).
 */
export class BusRelay {
  private loop: Loop | null = null;
  private leader: Tx | null = null;
  private readonly knownTopics = new Set<string>();

  constructor(
    private readonly kernel: Kernel,
    private readonly options: { batchSize: number; idleMs: number } = { batchSize: 2000, idleMs: 20 },
  ) {}

  /** publishes one batch; returns how many records it published */
  async runOnce(): Promise<number> {
    const { db, log } = this.kernel;
    const { rows } = await db.query<StagedRow>(
      `SELECT position, topic, key, value, headers, ts FROM events.outbox
      WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY transaction_id, position LIMIT $1`,
      [this.options.batchSize],
    );
    if (rows.length === 0) return 0;
    const byTopic = new Map<string, OutgoingRecord[]>();
    for (const r of rows) {
      const records = byTopic.get(r.topic) ?? [];
      records.push({ key: r.key, value: r.value, headers: r.headers, timestamp: r.ts.getTime() });
      byTopic.set(r.topic, records);
    }
    const unknown = [...byTopic.keys()].filter((t) => !this.knownTopics.has(t));
    if (unknown.length) {
      await log.ensureTopics(unknown.map((t) => topicSpecOf(this.kernel, t)));
      for (const t of unknown) this.knownTopics.add(t);
    }
    for (const [topic, records] of byTopic) await log.publish(topic, records);
    await db.query('DELETE FROM events.outbox WHERE position = ANY($1::bigint[])', [rows.map((r) => r.position)]);
    return rows.length;
  }

  start(): void {
    this.loop = startLoop(
      async () => {
        if (!(await this.lead())) return false;
        return (await this.runOnce()) > 0;
      },
      {
        idleMs: this.options.idleMs,
        maxBackoffMs: 2000,
        onError: (error, n) => {
          if (n === 1 || n % 50 === 0)
            this.kernel.logger.warn(
              { err: error, failures: n },
              'event bus relay cannot publish; retrying the same records',
            );
        },
      },
    );
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
    if (this.leader) {
      await this.leader.query('SELECT pg_advisory_unlock(hashtext($1))', [LEADER_LOCK]).catch(() => undefined);
      this.leader.release();
      this.leader = null;
    }
  }

  private async lead(): Promise<boolean> {
    if (this.leader) return true;
    const client = await this.kernel.db.connect();
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
      LEADER_LOCK,
    ]);
    if (rows[0]?.ok) {
      this.leader = client;
      client.on('error', () => {
        this.leader = null;
      });
      return true;
    }
    client.release();
    return false;
  }
}
