/**
 * Webhook intake, durably stored (issue 13 aim: ≥ 1,000/s): Stripe-signed deliveries of distinct
 * events POSTed to /v1/billing/webhooks/stripe (signature verified over the raw bytes, the event
 * inserted in billing.webhook_events and committed before the 200), closed loop with `inFlight`
 * requests outstanding, platform (role all) and client in this process. Processing is not part of
 * the figure (it is asynchronous; the worker is slowed to its idle interval).
 * Usage: source .test-infra/env; npx tsx bench/billing-webhooks.ts [seconds=10] [inFlight=32]
 */
import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { billingPlatform, loadAverage } from './billing-support';
import { load, machine, progress, summarize } from './support';

const seconds = Number(process.argv[2] ?? 10);
const inFlight = Number(process.argv[3] ?? 32);
const SECRET = 'whsec_bench';
const stripe = new Stripe('sk_test_unused');

const p = await billingPlatform({ STRIPE_WEBHOOK_SECRET: SECRET, RATE_LIMIT_ANONYMOUS_PER_MIN: '100000000' });
try {
  const deliver = async () => {
    const raw = JSON.stringify({
      id: `evt_${randomUUID()}`,
      object: 'event',
      type: 'invoice.paid',
      data: { object: { id: 'in_1', subscription: `sub_${randomUUID()}` } },
    });
    const res = await p.http('/v1/billing/webhooks/stripe', {
      method: 'POST',
      body: raw,
      headers: {
        'content-type': 'application/json',
        'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: raw, secret: SECRET }),
      },
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
  };
  for (let i = 0; i < 200; i += 1) await deliver();
  progress('webhooks', `${inFlight} in flight for ${seconds} s (load average ${await loadAverage()})`);
  const before = Number(
    (await p.kernel.db.query<{ n: string }>('SELECT count(*) AS n FROM billing.webhook_events')).rows[0]!.n,
  );
  const { calls, seconds: took, latencies } = await load(inFlight, seconds, () => deliver());
  const stored =
    Number((await p.kernel.db.query<{ n: string }>('SELECT count(*) AS n FROM billing.webhook_events')).rows[0]!.n) -
    before;
  const s = summarize(latencies);
  console.log(machine());
  console.log(
    `webhook intake (verified, stored, committed before the answer), ${inFlight} in flight for ${took.toFixed(1)} s`,
  );
  console.log(
    `  ${(calls / took).toFixed(0)} deliveries/s (aim ≥ 1,000/s), ${stored} rows stored for ${calls} answers; p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms; load average after: ${await loadAverage()}`,
  );
} finally {
  await p.close();
}
