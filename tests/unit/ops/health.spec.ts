import { describe, expect, it } from 'vitest';
import { formatDuration, HealthRegistry } from '../../../infra/health';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const registry = () => new HealthRegistry('1.2.3', { degradedAfterMs: 50, timeoutMs: 200 });

describe('the health report', () => {
  it('is healthy when every component answers in time, with each latency', async () => {
    const health = registry();
    health.register('postgresql', async () => undefined);
    health.register('kafka', async () => undefined);
    const report = await health.report();
    expect(report).toMatchObject({ status: 'healthy', version: '1.2.3', uptime: expect.any(String) });
    expect(report.components).toEqual({
      postgresql: { status: 'healthy', latencyMs: expect.any(Number), error: null },
      kafka: { status: 'healthy', latencyMs: expect.any(Number), error: null },
    });
  });

  it('is degraded when a component answers slowly, naming the latency', async () => {
    const health = registry();
    health.register('postgresql', async () => undefined);
    // a check that deliberately takes 80 ms
    health.register('kafka', () => sleep(80));
    const report = await health.report();
    expect(report.status).toBe('degraded');
    expect(report.components.kafka).toMatchObject({
      status: 'degraded',
      error: expect.stringMatching(/^slow: \d+ ms$/),
    });
    expect(report.components.postgresql!.status).toBe('healthy');
  });

  it('is unhealthy when a component fails or does not answer, whatever the others say', async () => {
    const health = registry();
    // a check that deliberately takes 80 ms
    health.register('slow', () => sleep(80));
    health.register('down', () => Promise.reject(new Error('connection refused')));
    health.register('silent', () => new Promise<void>(() => undefined));
    const report = await health.report();
    expect(report.status).toBe('unhealthy');
    expect(report.components.down).toEqual({ status: 'unhealthy', latencyMs: null, error: 'connection refused' });
    expect(report.components.silent).toEqual({
      status: 'unhealthy',
      latencyMs: null,
      error: 'no answer within 200 ms',
    });
  });

  it('formats the uptime in days, hours, minutes and seconds', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(90_061_000)).toBe('1d 1h 1m 1s');
  });
});
