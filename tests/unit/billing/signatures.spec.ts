import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { verifySignature } from '../../../commands/billing/webhooks';
import { isDomainError } from '../../../domain/shared/errors';

/** the two providers' schemes over the exact raw bytes (rulings): Stripe t=…,v1=… over "t.body", Paddle ts=…;h1=… over "ts:body" */
const SECRET = 'whsec_unit';
const NOW = 1_800_000_000_000;
const body = Buffer.from('{"id":"evt_1","type":"invoice.paid","data":{"object":{"subscription":"sub_1"}}}');
const stripe = new Stripe('sk_test_unused');

const refusal = (fn: () => void): string => {
  try {
    fn();
  } catch (error) {
    if (isDomainError(error)) {
      const code = error.extensions?.code;
      return `${error.status} ${error.suffix} ${typeof code === 'string' ? code : ''}`.trim();
    }
    throw error;
  }
  return 'accepted';
};

describe('Stripe-Signature', () => {
  const header = (t = NOW / 1000, secret = SECRET) =>
    stripe.webhooks.generateTestHeaderString({ payload: body.toString(), secret, timestamp: t });
  it("accepts the official package's header, with a second (rolled) v1 too", () => {
    expect(refusal(() => verifySignature('stripe', SECRET, header(), body, NOW, 300))).toBe('accepted');
    expect(refusal(() => verifySignature('stripe', SECRET, `${header()},v1=${'ab'.repeat(32)}`, body, NOW, 300))).toBe(
      'accepted',
    );
  });
  it('refuses another body, another secret, a time beyond 300 s either way, and a missing header (its own code)', () => {
    expect(
      refusal(() => verifySignature('stripe', SECRET, header(), Buffer.concat([body, Buffer.from(' ')]), NOW, 300)),
    ).toBe('401 webhook-signature-invalid');
    expect(refusal(() => verifySignature('stripe', SECRET, header(NOW / 1000, 'whsec_other'), body, NOW, 300))).toBe(
      '401 webhook-signature-invalid',
    );
    expect(refusal(() => verifySignature('stripe', SECRET, header(NOW / 1000 - 301), body, NOW, 300))).toBe(
      '401 webhook-signature-invalid',
    );
    expect(refusal(() => verifySignature('stripe', SECRET, header(NOW / 1000 + 301), body, NOW, 300))).toBe(
      '401 webhook-signature-invalid',
    );
    expect(refusal(() => verifySignature('stripe', SECRET, header(NOW / 1000 - 299), body, NOW, 300))).toBe('accepted');
    expect(refusal(() => verifySignature('stripe', SECRET, undefined, body, NOW, 300))).toBe(
      '401 webhook-signature-invalid SIGNATURE_MISSING',
    );
    expect(refusal(() => verifySignature('stripe', SECRET, 'v1=abc', body, NOW, 300))).toBe(
      '401 webhook-signature-invalid',
    );
  });
});

describe('Paddle-Signature', () => {
  const header = (ts = NOW / 1000, raw = body) =>
    `ts=${ts};h1=${createHmac('sha256', SECRET)
      .update(Buffer.concat([Buffer.from(`${ts}:`), raw]))
      .digest('hex')}`;
  it('accepts ts=…;h1=… over "ts:body"', () =>
    expect(refusal(() => verifySignature('paddle', SECRET, header(), body, NOW, 300))).toBe('accepted'));
  it('refuses a Stripe-style header, a changed body and a stale time', () => {
    expect(refusal(() => verifySignature('paddle', SECRET, header().replace(';', ','), body, NOW, 300))).toBe(
      '401 webhook-signature-invalid',
    );
    expect(
      refusal(() => verifySignature('paddle', SECRET, header(NOW / 1000, Buffer.from('{}')), body, NOW, 300)),
    ).toBe('401 webhook-signature-invalid');
    expect(refusal(() => verifySignature('paddle', SECRET, header(NOW / 1000 - 3600), body, NOW, 300))).toBe(
      '401 webhook-signature-invalid',
    );
  });
});
