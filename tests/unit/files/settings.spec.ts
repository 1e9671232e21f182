import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../infra/config';
import { filesSettingsOf } from '../../../commands/files/settings';

describe('the files configuration', () => {
  it('has the limits of spec 002 by default', () => {
    const s = filesSettingsOf(loadConfig({}));
    expect(s).toMatchObject({
      scan: 'clamd',
      stagingTtlMs: 24 * 3600_000,
      maxStagedPerTenant: 100,
      presignTtlSeconds: 900,
      limits: { imageBytes: 10 * 1_048_576, documentBytes: 50 * 1_048_576 },
      processingTimeoutMs: 30_000,
      retentionDays: 30,
      orphanMinAgeMs: 24 * 3600_000,
      sweepIntervalMs: 24 * 3600_000,
    });
  });
  it('accepts FILES_SCAN=skip in development', () =>
    expect(loadConfig({ FILES_SCAN: 'skip', PLATFORM_ENV: 'development' }).FILES_SCAN).toBe('skip'));
  it.each(['production', 'staging', 'test'])(
    'refuses FILES_SCAN=skip with PLATFORM_ENV=%s, naming the variable',
    (env) => {
      expect(() => loadConfig({ FILES_SCAN: 'skip', PLATFORM_ENV: env })).toThrow(ConfigError);
      expect(() => loadConfig({ FILES_SCAN: 'skip', PLATFORM_ENV: env })).toThrow(
        /^FILES_SCAN: skip .* only with PLATFORM_ENV=development/,
      );
    },
  );
  it('refuses a size limit that is not a positive number', () =>
    expect(() => loadConfig({ FILES_MAX_IMAGE_SIZE_MB: 'ten' })).toThrow(/FILES_MAX_IMAGE_SIZE_MB/));
});
