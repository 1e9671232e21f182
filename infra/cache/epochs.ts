import { randomBytes } from 'node:crypto';
import type { KeyValueCache } from './port';

const DAY_MS = 24 * 3600_000;

/**
 * Epochs of state that processes cache locally (access, plans, limits), kept in the shared cache
 * (Redis when REDIS_URL, so every process sees them): a process ties each cached entry to the
 * epochs of its scopes when it loads it, and serves the entry only while they are unchanged. A
 * command that changes the state bumps the epochs after its commit and before it answers, so the
 * caller's very next request, on any process, reloads. Log-delivered invalidation
 * (infra/invalidations.ts) is the other half: it reaches processes without a shared cache.
 *
 * Every epoch value is new (process id + counter), never a count: a key that expired or was
 * evicted reads as absent, gets a fresh value, and can never come back equal to an older one.
 */
export class CacheEpochs {
  private readonly processId = randomBytes(6).toString('base64url');
  private counter = 0;

  constructor(
    private readonly cache: KeyValueCache,
    private readonly prefix: string,
    private readonly ttlMs = DAY_MS,
  ) {}

  /**
   * The epochs of these scopes as one token, in one round trip (MGET) when they exist; a scope
   * without one gets one first. null when an epoch could not be established: do not cache then.
   * Throws when the shared cache is unreachable.
   */
  async current(scopes: readonly string[]): Promise<string | null> {
    const keys = scopes.map((s) => this.key(s));
    const values = await this.cache.getMany(keys);
    for (const [i, value] of values.entries()) {
      if (value !== null) continue;
      const fresh = this.next();
      values[i] = (await this.cache.setIfAbsent(keys[i]!, fresh, this.ttlMs)) ? fresh : await this.cache.get(keys[i]!);
      if (values[i] === null) return null;
    }
    return values.join('|');
  }

  /** gives these scopes new epochs: every entry cached under the old ones is stale from now on */
  async bump(scopes: readonly string[]): Promise<void> {
    await Promise.all(scopes.map((s) => this.cache.set(this.key(s), this.next(), this.ttlMs)));
  }

  private key(scope: string): string {
    return `epoch:${this.prefix}:${scope}`;
  }

  private next(): string {
    this.counter += 1;
    return `${this.processId}.${this.counter.toString(36)}`;
  }
}

/**
 * Values read from PostgreSQL kept in this process per key while the epoch of their scope stands:
 * the commands that change them bump the scope after their commit (`epochs.bump`), so the next
 * read in every process sharing the cache loads again; a process that shares none clears the memo
 * on the changing events (kernel.invalidations), and the age limit is the safety net. The epoch
 * is read before the value, so a value stored under it predates no change made after it; an epoch
 * that cannot be read (null) keeps nothing.
 */
export class EpochMemo<T> {
  private readonly entries = new Map<string, { tag: string; value: T; at: number }>();

  constructor(
    private readonly epochs: CacheEpochs,
    private readonly scope: string,
    private readonly maxAgeMs = 60_000,
    private readonly maxEntries = 20_000,
  ) {}

  /** the value of `key`, loaded when the scope's epoch moved since it was kept; `keep` says which values may be kept */
  async get(key: string, load: () => Promise<T>, keep: (value: T) => boolean = () => true): Promise<T> {
    const tag = await this.epochs.current([this.scope]).catch(() => null);
    const now = Date.now();
    const found = this.entries.get(key);
    if (tag !== null && found?.tag === tag && now - found.at < this.maxAgeMs && now >= found.at) return found.value;
    const value = await load();
    if (tag !== null && keep(value)) {
      if (this.entries.size >= this.maxEntries) this.entries.clear();
      this.entries.set(key, { tag, value, at: now });
    }
    return value;
  }

  /** forgets every value kept here and moves the shared epoch, so that every process loads again */
  async changed(): Promise<void> {
    this.entries.clear();
    await this.epochs.bump([this.scope]).catch(() => undefined);
  }

  /** forgets every value kept here (a change announced by the log) */
  clear(): void {
    this.entries.clear();
  }
}
