import type { FastifyError, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { commonErrors } from '../../domain/shared/errors';
import { parseAmount } from '../../domain/money/amount';
import { DURATION_PATTERN, parseDuration } from '../../domain/money/duration';
import { moneyErrors } from '../../domain/money/errors';
import { ISO_4217_CODES, isIsoCurrency } from '../../domain/money/iso-4217';
import { TransactionView, WalletView } from '../../domain/money/views';
import { configureMoney, moneyContext } from '../../commands/money/context';
import { walletStream } from '../../commands/money/aggregates';
import * as money from '../../commands/money/handlers';
import { HOLD_TTL_MAX_HOURS } from '../../commands/money/settings';
import { RawJson } from '../../domain/shared/json';
import { normalizeIdempotencyKey } from '../../infra/eventstore/idempotency';
import { executeCommand } from '../../infra/http/commands';
import { defineRoutes } from '../../infra/services';
import { parseMoneyBody } from './json-body';

const Id = z.uuid({ message: 'must be a UUID' });
/** a movement's currency: the wallet's, so a code of ISO 4217 List One (anything else is a mismatch) */
const Currency = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD')
  .meta({ enum: [...ISO_4217_CODES] });
/** a new wallet's currency: a code of ISO 4217 List One (domain/money/iso-4217.ts) */
const IsoCurrency = z
  .string()
  .refine(isIsoCurrency, 'must be an ISO 4217 currency code such as USD')
  .meta({ enum: [...ISO_4217_CODES], description: 'a code of ISO 4217 List One, such as USD' });
const Reason = z.string().max(500).default('');
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
/**
 * meta: any JSON object of at most 16 KB, kept as the text the client sent (the money body parser
 * hands it over as RawJson) and answered exactly so; a parser that made an object of it (a caller
 * other than HTTP) gets its JSON text.
 */
const Meta = z
  .custom<RawJson | Record<string, unknown>>(
    (v) => (v instanceof RawJson ? isObject(v.value) : isObject(v)),
    'meta must be a JSON object',
  )
  .transform((v) => (v instanceof RawJson ? v.text : JSON.stringify(v)))
  .refine((text) => text.length <= 16_384, 'meta must be at most 16 KB of JSON')
  .prefault({})
  .meta({
    type: 'object',
    additionalProperties: true,
    description: 'any JSON object, at most 16 KB of JSON; stored and answered exactly as sent',
  });
/**
 * Checked by the handler, so that every wrong amount (missing included) answers invalid-amount
 * (docs/decisions.md); documented as what it must be.
 */
const Amount = z
  .custom<unknown>(() => true)
  .meta({
    type: 'integer',
    format: 'int64',
    minimum: 1,
    description:
      'integer number of cents written as plain digits, 1 to 9223372036854775807 (exact as written, beyond 2^53 − 1 too); 1e3, 1.0, strings and fractions are refused',
  });

/** a movement without an amount answers invalid-amount like every wrong amount (the schema requires one) */
const amountRequired = async (request: FastifyRequest): Promise<void> => {
  if (isObject(request.body) && !('amount' in (request.body as object))) {
    throw moneyErrors.invalidAmount('amount is required: an integer number of cents from 1 to 9223372036854775807.');
  }
};

const Movement = z.object({ amount: Amount, currency: Currency, reason: Reason, meta: Meta });
const HoldBody = Movement.extend({
  ttl: z
    .string()
    .max(32)
    .optional()
    .describe('duration such as 72h, 90m, 1h30m or PT72H; default MONEY_HOLD_TTL_HOURS, at most 168h')
    .meta({ pattern: DURATION_PATTERN }),
});
const ResolveBody = z.object({ holdTransactionId: Id.optional(), reason: Reason, meta: Meta }).prefault({});
const TransferBody = Movement.extend({ fromWalletId: Id, toWalletId: Id });
const ReversalBody = z.object({ originalTransactionId: Id.optional(), reason: Reason, meta: Meta }).prefault({});
const IdParams = z.object({ id: Id });
const TransferView = TransactionView.extend({ fromWalletId: z.string(), toWalletId: z.string() });

const keyOf = (request: FastifyRequest): string | null => {
  const key = request.headers['idempotency-key'];
  return typeof key === 'string' ? normalizeIdempotencyKey(key) : null;
};
const mustMatch = (field: string, given: string | undefined, id: string): void => {
  if (given !== undefined && given !== id)
    throw commonErrors.validation([{ field, message: `must equal the id in the path (${id})`, code: 'MISMATCH' }]);
};
const ttlOf = (ttl: string | undefined): number | null => {
  if (ttl === undefined) return null;
  const ms = parseDuration(ttl);
  if (ms === null || ms < 1000 || ms > HOLD_TTL_MAX_HOURS * 3600_000) {
    throw commonErrors.validation([
      {
        field: 'ttl',
        message: `ttl must be a duration from 1s to ${HOLD_TTL_MAX_HOURS}h, such as 72h`,
        code: 'INVALID_TTL',
      },
    ]);
  }
  return ms;
};

const required = { idempotency: 'required' } as const;
/** movements on known wallets only read and record events: they share transactions (group commit) */
const onWallets = (request: FastifyRequest, ...walletIds: string[]) => ({
  ...required,
  locks: walletIds.map((id) => walletStream(request.principal?.tenantId ?? '', id)),
});
/**
 * route configs: permission, the required Idempotency-Key and the problems beyond the generic ones
 * (402 plan limit or suspended subscription, 503 billing unavailable; gateway/openapi.ts)
 */
const write = { access: 'permission', permission: 'money.transactions.write', idempotency: 'required' } as const;
const moves = { ...write, problems: [402, 503] };
/** spec 001: a suspended tenant keeps its debit, transfer, hold, confirm and cancel; its other movements are refused */
const openWhileSuspended = { whileSuspended: 'allowed' } as const;
const refusedWhileSuspended = { whileSuspended: 'refused' } as const;

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
    // amount and meta keep the exact text the client wrote (json-body.ts)
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = String(body);
      if (text.trim() === '') return done(null, undefined);
      try {
        done(null, parseMoneyBody(text));
      } catch (error) {
        const e = error as FastifyError;
        e.statusCode = 400;
        done(e, undefined);
      }
    });
    const r = app.withTypeProvider<ZodTypeProvider>();
    const ctx = () => moneyContext(kernel);

    r.post(
      '/wallets',
      {
        config: {
          access: 'permission',
          permission: 'money.wallets.write',
          idempotency: 'required',
          ...refusedWhileSuspended,
          problems: [402, 404, 409],
        },
        schema: {
          body: z.object({
            userId: z.string().min(1).max(128),
            currency: IsoCurrency,
            label: z.string().max(100).default(''),
          }),
          response: { 201: WalletView },
        },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, { status: 201, ...required }, (uow) =>
          money.openWallet(uow, ctx(), request.body),
        ),
    );

    for (const kind of ['credit', 'debit'] as const) {
      r.post(
        `/wallets/:id/${kind}`,
        {
          config: { ...moves, ...(kind === 'debit' ? openWhileSuspended : refusedWhileSuspended) },
          preValidation: amountRequired,
          schema: { params: IdParams, body: Movement, response: { 200: TransactionView } },
        },
        (request, reply) =>
          executeCommand(kernel, request, reply, onWallets(request, request.params.id), (uow) => {
            const b = request.body;
            const movement = {
              amount: parseAmount(b.amount),
              currency: b.currency,
              reason: b.reason,
              meta: b.meta,
              idempotencyKey: keyOf(request),
            };
            return kind === 'credit'
              ? money.credit(uow, ctx(), request.params.id, movement)
              : money.debit(uow, ctx(), request.params.id, movement);
          }),
      );
    }

    r.post(
      '/wallets/:id/hold',
      {
        config: { ...moves, ...openWhileSuspended, problems: [402, 429, 503] },
        preValidation: amountRequired,
        schema: { params: IdParams, body: HoldBody, response: { 200: TransactionView } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, onWallets(request, request.params.id), (uow) => {
          const b = request.body;
          return money.placeHold(uow, ctx(), request.params.id, {
            amount: parseAmount(b.amount),
            currency: b.currency,
            reason: b.reason,
            meta: b.meta,
            idempotencyKey: keyOf(request),
            ttlMs: ttlOf(b.ttl),
          });
        }),
    );

    for (const [path, kind] of [
      ['confirm', 'ConfirmHold'],
      ['cancel', 'CancelHold'],
    ] as const) {
      r.post(
        `/holds/:id/${path}`,
        {
          config: { ...write, ...openWhileSuspended, problems: [402, 422] },
          schema: { params: IdParams, body: ResolveBody, response: { 200: TransactionView } },
        },
        (request, reply) =>
          executeCommand(kernel, request, reply, required, (uow) => {
            mustMatch('holdTransactionId', request.body.holdTransactionId, request.params.id);
            return money.resolveHold(uow, ctx(), kind, request.params.id, {
              reason: request.body.reason,
              meta: request.body.meta,
              idempotencyKey: keyOf(request),
            });
          }),
      );
    }

    r.post(
      '/transfers',
      {
        config: { ...moves, ...openWhileSuspended, problems: [402, 404, 503] },
        preValidation: amountRequired,
        schema: { body: TransferBody, response: { 200: TransferView } },
      },
      (request, reply) => {
        // spec 000: sensitive operations, money transfers included, require a verified email
        if (!request.principal?.emailVerified) throw moneyErrors.emailNotVerified();
        return executeCommand(
          kernel,
          request,
          reply,
          onWallets(request, request.body.fromWalletId, request.body.toWalletId),
          (uow) => {
            const b = request.body;
            return money.transfer(uow, ctx(), {
              fromWalletId: b.fromWalletId,
              toWalletId: b.toWalletId,
              amount: parseAmount(b.amount),
              currency: b.currency,
              reason: b.reason,
              meta: b.meta,
              idempotencyKey: keyOf(request),
            });
          },
        );
      },
    );

    r.post(
      '/transactions/:id/reversal',
      {
        config: {
          access: 'permission',
          permission: 'money.transactions.reverse',
          idempotency: 'required',
          ...refusedWhileSuspended,
          problems: [402, 503],
        },
        schema: { params: IdParams, body: ReversalBody, response: { 200: TransactionView } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, required, (uow) => {
          mustMatch('originalTransactionId', request.body.originalTransactionId, request.params.id);
          return money.reverse(uow, ctx(), request.params.id, {
            reason: request.body.reason,
            meta: request.body.meta,
            idempotencyKey: keyOf(request),
          });
        }),
    );
  },
});

export { configureMoney };
