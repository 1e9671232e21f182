import type { FastifyError, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { commonErrors } from '../../domain/shared/errors';
import { parseAmount } from '../../domain/money/amount';
import { parseDuration } from '../../domain/money/duration';
import { moneyErrors } from '../../domain/money/errors';
import { TransactionView, WalletView } from '../../domain/money/views';
import { configureMoney, moneyContext } from '../../commands/money/context';
import { walletStream } from '../../commands/money/aggregates';
import * as money from '../../commands/money/handlers';
import { HOLD_TTL_MAX_HOURS } from '../../commands/money/settings';
import { executeCommand } from '../../infra/http/commands';
import { defineRoutes } from '../../infra/modules';
import { parseJsonExact } from './json-body';

const Id = z.uuid({ message: 'must be a UUID' });
const Currency = z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD');
const Reason = z.string().max(500).default('');
const Meta = z.record(z.string(), z.unknown()).refine((m) => JSON.stringify(m).length <= 16_384, 'meta must be at most 16 KB of JSON').default({});
/** checked by the handler so that every wrong amount answers invalid-amount (see docs/decisions.md) */
const Amount = z.unknown().optional().describe('integer number of cents, 1 to 9223372036854775807 (beyond 2^53 − 1 exact as written in the JSON text)');

const Movement = z.object({ amount: Amount, currency: Currency, reason: Reason, meta: Meta });
const HoldBody = Movement.extend({ ttl: z.string().max(32).optional().describe('duration such as 72h, 90m, 1h30m or PT72H; default MONEY_HOLD_TTL_HOURS, at most 168h') });
const ResolveBody = z.object({ holdTransactionId: Id.optional(), reason: Reason, meta: Meta }).default({ reason: '', meta: {} });
const TransferBody = Movement.extend({ fromWalletId: Id, toWalletId: Id });
const ReversalBody = z.object({ originalTransactionId: Id.optional(), reason: Reason, meta: Meta }).default({ reason: '', meta: {} });
const IdParams = z.object({ id: Id });
const TransferView = TransactionView.extend({ fromWalletId: z.string(), toWalletId: z.string() });

const keyOf = (request: FastifyRequest): string | null => (typeof request.headers['idempotency-key'] === 'string' ? request.headers['idempotency-key'] : null);
const mustMatch = (field: string, given: string | undefined, id: string): void => {
  if (given !== undefined && given !== id) throw commonErrors.validation([{ field, message: `must equal the id in the path (${id})`, code: 'MISMATCH' }]);
};
const ttlOf = (ttl: string | undefined): number | null => {
  if (ttl === undefined) return null;
  const ms = parseDuration(ttl);
  if (ms === null || ms < 1000 || ms > HOLD_TTL_MAX_HOURS * 3600_000) {
    throw commonErrors.validation([{ field: 'ttl', message: `ttl must be a duration from 1s to ${HOLD_TTL_MAX_HOURS}h, such as 72h`, code: 'INVALID_TTL' }]);
  }
  return ms;
};

const required = { idempotency: 'required' } as const;
/** movements on known wallets only read and record events: they share transactions (group commit) */
const onWallets = (request: FastifyRequest, ...walletIds: string[]) =>
  ({ ...required, locks: walletIds.map((id) => walletStream(request.principal?.tenantId ?? '', id)) });
const write = { access: 'permission', permission: 'money.transactions.write' } as const;

export default defineRoutes({
  namespace: 'money',
  permissions: {
    'money.wallets.read': 'read wallets and their balances',
    'money.wallets.write': 'open wallets',
    'money.transactions.read': 'read the transaction history',
    'money.transactions.write': 'credit, debit, hold, confirm, cancel and transfer',
    'money.transactions.reverse': 'reverse completed transactions and confirmed holds',
  },
  async start(kernel) {
    moneyContext(kernel);
  },
  register(app, kernel) {
    // integers beyond 2^53 − 1 stay exact in money bodies (amounts up to 2^63 − 1)
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = String(body);
      if (text.trim() === '') return done(null, undefined);
      try {
        done(null, parseJsonExact(text));
      } catch (error) {
        const e = error as FastifyError;
        e.statusCode = 400;
        done(e, undefined);
      }
    });
    const r = app.withTypeProvider<ZodTypeProvider>();
    const ctx = () => moneyContext(kernel);

    r.post('/wallets', {
      config: { access: 'permission', permission: 'money.wallets.write' },
      schema: { body: z.object({ userId: z.string().min(1).max(128), currency: Currency, label: z.string().max(100).default('') }), response: { 201: WalletView } },
    }, (request, reply) => executeCommand(kernel, request, reply, { status: 201, ...required },
      (uow) => money.openWallet(uow, ctx(), request.body)));

    for (const kind of ['credit', 'debit'] as const) {
      r.post(`/wallets/:id/${kind}`, {
        config: write,
        schema: { params: IdParams, body: Movement, response: { 200: TransactionView } },
      }, (request, reply) => executeCommand(kernel, request, reply, onWallets(request, request.params.id), (uow) => {
        const b = request.body;
        const movement = { amount: parseAmount(b.amount), currency: b.currency, reason: b.reason, meta: b.meta, idempotencyKey: keyOf(request) };
        return kind === 'credit' ? money.credit(uow, ctx(), request.params.id, movement) : money.debit(uow, ctx(), request.params.id, movement);
      }));
    }

    r.post('/wallets/:id/hold', {
      config: write,
      schema: { params: IdParams, body: HoldBody, response: { 200: TransactionView } },
    }, (request, reply) => executeCommand(kernel, request, reply, onWallets(request, request.params.id), (uow) => {
      const b = request.body;
      return money.placeHold(uow, ctx(), request.params.id, {
        amount: parseAmount(b.amount), currency: b.currency, reason: b.reason, meta: b.meta, idempotencyKey: keyOf(request), ttlMs: ttlOf(b.ttl),
      });
    }));

    for (const [path, kind] of [['confirm', 'ConfirmHold'], ['cancel', 'CancelHold']] as const) {
      r.post(`/holds/:id/${path}`, {
        config: write,
        schema: { params: IdParams, body: ResolveBody, response: { 200: TransactionView } },
      }, (request, reply) => executeCommand(kernel, request, reply, required, (uow) => {
        mustMatch('holdTransactionId', request.body.holdTransactionId, request.params.id);
        return money.resolveHold(uow, ctx(), kind, request.params.id, { reason: request.body.reason, meta: request.body.meta, idempotencyKey: keyOf(request) });
      }));
    }

    r.post('/transfers', {
      config: write,
      schema: { body: TransferBody, response: { 200: TransferView } },
    }, (request, reply) => {
      // spec 000: sensitive operations, money transfers included, require a verified email
      if (!request.principal?.emailVerified) throw moneyErrors.emailNotVerified();
      return executeCommand(kernel, request, reply, onWallets(request, request.body.fromWalletId, request.body.toWalletId), (uow) => {
        const b = request.body;
        return money.transfer(uow, ctx(), {
          fromWalletId: b.fromWalletId, toWalletId: b.toWalletId, amount: parseAmount(b.amount), currency: b.currency, reason: b.reason, meta: b.meta, idempotencyKey: keyOf(request),
        });
      });
    });

    r.post('/transactions/:id/reversal', {
      config: { access: 'permission', permission: 'money.transactions.reverse' },
      schema: { params: IdParams, body: ReversalBody, response: { 200: TransactionView } },
    }, (request, reply) => executeCommand(kernel, request, reply, required, (uow) => {
      mustMatch('originalTransactionId', request.body.originalTransactionId, request.params.id);
      return money.reverse(uow, ctx(), request.params.id, { reason: request.body.reason, meta: request.body.meta, idempotencyKey: keyOf(request) });
    }));
  },
});

export { configureMoney };
