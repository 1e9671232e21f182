import { hkdfSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/**
 * One master secret (PLATFORM_SECRET_KEY: 32 bytes, base64) from which every purpose-specific key
 * is derived with HKDF-SHA256: the TOTP secret box, the signing-key box, local presigned URLs, …
 * Rotating the master therefore rotates them all. The embedded default makes one on first start
 * and keeps it beside the data (owner-readable only); split roles must be given the same value.
 */
export class PlatformSecrets {
  /** derived once per purpose: a module key's check or a webhook's signature asks for its key on every call */
  private readonly derived = new Map<string, Buffer>();

  constructor(private readonly master: Buffer) {
    if (master.length < 32) throw new Error('PLATFORM_SECRET_KEY must be at least 32 bytes (base64)');
  }

  /** a 32-byte key for one purpose, e.g. 'identity.totp.v1' (a copy: callers may not change the one kept) */
  key(purpose: string): Buffer {
    let found = this.derived.get(purpose);
    if (!found) {
      found = Buffer.from(hkdfSync('sha256', this.master, Buffer.alloc(0), purpose, 32));
      this.derived.set(purpose, found);
    }
    return Buffer.from(found);
  }
}

export const loadSecrets = async (options: {
  configured?: string;
  dataDir: string;
  mayGenerate: boolean;
}): Promise<PlatformSecrets> => {
  if (options.configured) return new PlatformSecrets(Buffer.from(options.configured, 'base64'));
  if (!options.mayGenerate) throw new Error('PLATFORM_SECRET_KEY is required when running a role against real engines');
  const file = join(resolve(options.dataDir), 'platform.secret');
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing) return new PlatformSecrets(Buffer.from(existing.trim(), 'base64'));
  await mkdir(resolve(options.dataDir), { recursive: true });
  const made = randomBytes(32).toString('base64');
  await writeFile(file, made, { mode: 0o600, flag: 'wx' }).catch(async () => undefined);
  return new PlatformSecrets(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64'));
};
