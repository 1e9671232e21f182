import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Kernel } from '../../infra/kernel';
import { QUEUE_CHANNEL } from './queue';

/**
 * A delivery worker process's seat: a dedicated connection that holds a session advisory lock on
 * the worker's key (the key its claimed queue rows carry) and listens for new work. When the
 * process dies or the connection drops, PostgreSQL frees the lock at once, and any worker finds
 * the rows it was sending (their key no longer locked) and queues them again — a kill mid-send
 * costs a duplicate at worst, never a loss, and no lease has to run out first.
 */
export class WorkerSession {
  private failed = false;

  private constructor(
    private readonly client: pg.Client,
    readonly key: bigint,
  ) {}

  static async open(kernel: Kernel, onWork: () => void): Promise<WorkerSession> {
    const pool = kernel.db;
    const client = new pg.Client({
      ...pool.options,
      application_name: `${pool.options.application_name ?? 'platform'}/notify-worker`.slice(0, 63),
      keepAlive: true,
    });
    // a positive 63-bit key: split into the two 32-bit halves pg_locks shows (classid, objid)
    const key = randomBytes(8).readBigUInt64BE() >> 1n;
    const session = new WorkerSession(client, key === 0n ? 1n : key);
    client.on('error', (error) => {
      session.failed = true;
      kernel.logger.warn({ err: error }, 'notify worker session lost; reopening');
    });
    client.on('notification', () => onWork());
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1::bigint)', [session.key.toString()]);
      await client.query(`LISTEN ${QUEUE_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return session;
  }

  get alive(): boolean {
    return !this.failed;
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}

/** SQL: the worker holding key expression k (a bigint) is alive, its session lock held */
export const workerIsLive = (k: string) => `EXISTS (
  SELECT 1 FROM pg_locks l
   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND l.classid = ((${k} >> 32) & 4294967295)::oid
     AND l.objid = (${k} & 4294967295)::oid)`;
