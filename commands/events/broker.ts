import { withTimeout } from '../../infra/log/support';
import type { LogPort } from '../../infra/log/port';

/**
 * Whether the log takes records now (spec 002: "events.broker.unavailable 503"). A publish asks
 * before it stages anything: with the broker down the request fails whole and nothing is staged.
 * Concurrent publishes share one ping; a failure is remembered for a second, so an outage answers
 * fast instead of every request waiting for the deadline; a success is trusted for a quarter of a
 * second, so a steady stream of publishes does not ask the log (a Kafka describeCluster) every time.
 * (What is staged is published by the relay once the log takes it again: a broker lost after the
 * check delays a batch, never splits it.)
 */
export class BrokerProbe {
  private inFlight: Promise<boolean> | null = null;
  private downUntil = 0;
  private upUntil = 0;

  constructor(
    private readonly log: Pick<LogPort, 'ping'>,
    private readonly timeoutMs: number,
    private readonly rememberFailureMs = 1000,
    private readonly trustSuccessMs = 250,
  ) {}

  async reachable(): Promise<boolean> {
    if (Date.now() < this.downUntil) return false;
    if (Date.now() < this.upUntil) return true;
    this.inFlight ??= withTimeout(this.log.ping(), this.timeoutMs, 'broker check')
      .then(
        () => {
          this.upUntil = Date.now() + this.trustSuccessMs;
          return true;
        },
        () => {
          this.downUntil = Date.now() + this.rememberFailureMs;
          return false;
        },
      )
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }
}
