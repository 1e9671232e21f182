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
