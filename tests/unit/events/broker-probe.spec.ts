import { describe, expect, it } from 'vitest';
import { BrokerProbe } from '../../../commands/events/broker';

/** a log whose pings the test answers one by one */
const fakeLog = () => {
  const pings: { resolve: () => void; reject: (e: Error) => void }[] = [];
  return { pings, ping: () => new Promise<void>((resolve, reject) => pings.push({ resolve, reject })) };
};

const settled = () => new Promise((r) => setImmediate(r));

/** a probe whose first ping answered at time 0 */
const trusted = async () => {
  const clock = { now: 0 };
  const log = fakeLog();
  const probe = new BrokerProbe(log, 5_000, 1_000, 250, 150, () => clock.now);
  const first = probe.reachable();
  log.pings[0]!.resolve();
  expect(await first).toBe(true);
  return { clock, log, probe };
};

describe('BrokerProbe', () => {
  it('given a success, when publishes ask within 150 ms, then they are answered without a ping', async () => {
    const { clock, log, probe } = await trusted();
    clock.now = 140;
    expect(await probe.reachable()).toBe(true);
    expect(log.pings).toHaveLength(1);
  });

  it('given a success 150–250 ms old, when publishes ask, then they are answered at once and one ping runs behind them', async () => {
    const { clock, log, probe } = await trusted();
    clock.now = 200;
    expect(await probe.reachable()).toBe(true);
    expect(await probe.reachable()).toBe(true);
    expect(log.pings).toHaveLength(2);
    log.pings[1]!.resolve();
    await settled();
    clock.now = 340; // past the first answer's 250 ms: trusted from the second ping's answer (at 200)
    expect(await probe.reachable()).toBe(true);
    expect(log.pings).toHaveLength(2);
  });

  it('given the ping behind the answers fails, then the next publish is refused at once', async () => {
    const { clock, log, probe } = await trusted();
    clock.now = 200;
    expect(await probe.reachable()).toBe(true);
    log.pings[1]!.reject(new Error('broker gone'));
    await settled();
    expect(await probe.reachable()).toBe(false);
  });

  it('given a success older than 250 ms, when a publish asks, then it waits for a ping', async () => {
    const { clock, log, probe } = await trusted();
    clock.now = 300;
    let answered: boolean | null = null;
    const asked = probe.reachable().then((r) => (answered = r));
    await settled();
    expect(answered).toBeNull();
    log.pings[1]!.reject(new Error('broker gone'));
    expect(await asked).toBe(false);
  });
});
