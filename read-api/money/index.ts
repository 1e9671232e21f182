import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { moneyErrors } from '../../domain/money/errors';
import { BalanceView, TransactionView, WalletView } from '../../domain/money/views';
import { Instant } from '../../infra/http/instant';
import type { Cursor } from '../../infra/http/pagination';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { defineRoutes } from '../../infra/modules';
import {
  findTransactionView,
  findWallet,
  listTransactions,
  listWallets,
  transactionOf,
  walletOf,
} from '../../projections/money/queries';
import { callerOf, type Principal } from '../../infra/http/auth';

const Id = z.uuid({ message: 'must be a UUID' });
/** a page of one wallet's lines ends at a ledger sequence; a tenant-wide page at a line's time and id */
const TransactionCursor = z.union([
  z.object({ s: z.number().int().min(0).max(2_147_483_647) }).transform((c) => ({ seq: c.s })),
  z
    .object({
      c: Instant,
      id: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[0-9a-zA-Z-]+$/),
    })
    .transform((c) => ({ createdAt: c.c, id: c.id })),
]);
const readWallets = { access: 'permission', permission: 'money.wallets.read' } as const;
const readTransactions = { access: 'permission', permission: 'money.transactions.read' } as const;

/** the tenant's wallet, or 404 (another tenant's id included) */
const walletOrNotFound = async (...args: Parameters<typeof findWallet>) => {
  const wallet = await findWallet(...args);
  if (!wallet) throw moneyErrors.walletNotFound();
  return wallet;
};

export default defineRoutes({
  namespace: 'money',
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const tenantOf = (request: { principal?: Principal }) => callerOf(request).tenantId;

    r.get(
      '/wallets',
      {
        config: readWallets,
        schema: {
          querystring: z.object({
            ...pageQuery,
            userId: z.string().min(1).max(128).optional(),
            currency: z
              .string()
              .regex(/^[A-Z]{3}$/)
              .optional(),
          }),
          response: { 200: pageEnvelope(WalletView) },
        },
      },
      async (request) => {
        const after = decodeCursor(request.query.page_token, ['id']);
        const rows = await listWallets(kernel.db, tenantOf(request), {
          userId: request.query.userId,
          currency: request.query.currency,
          afterId: after?.id,
          limit: request.query.page_size + 1,
        });
        return toPage(rows, request.query.page_size, walletOf, (row) => ({ id: row.id }));
      },
    );

    r.get(
      '/wallets/:id',
      {
        config: readWallets,
        schema: { params: z.object({ id: Id }), response: { 200: WalletView } },
      },
      async (request) => {
        return walletOrNotFound(kernel.db, tenantOf(request), request.params.id);
      },
    );

    r.get(
      '/wallets/:id/balance',
      {
        config: readWallets,
        schema: { params: z.object({ id: Id }), response: { 200: BalanceView } },
      },
      async (request) => {
        return (await walletOrNotFound(kernel.db, tenantOf(request), request.params.id)).balance;
      },
    );

    r.get(
      '/transactions',
      {
        config: readTransactions,
        schema: {
          querystring: z.object({
            ...pageQuery,
            walletId: Id.optional(),
            type: TransactionView.shape.type.optional(),
            status: TransactionView.shape.status.optional(),
            since: Instant.optional().describe('inclusive'),
            until: Instant.optional().describe('exclusive'),
          }),
          response: { 200: pageEnvelope(TransactionView) },
        },
      },
      async (request) => {
        const q = request.query;
        const tenantId = tenantOf(request);
        if (q.walletId) await walletOrNotFound(kernel.db, tenantId, q.walletId);
        const after = decodeCursor(q.page_token, TransactionCursor) ?? undefined;
        const rows = await listTransactions(kernel.db, tenantId, {
          walletId: q.walletId,
          type: q.type,
          status: q.status,
          since: q.since,
          until: q.until,
          after,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, transactionOf, (row): Cursor =>
          q.walletId ? { s: row.seq } : { c: row.created_at.toISOString(), id: row.id },
        );
      },
    );

    r.get(
      '/transactions/:id',
      {
        config: readTransactions,
        schema: { params: z.object({ id: Id }), response: { 200: TransactionView } },
      },
      async (request) => {
        const found = await findTransactionView(kernel.db, tenantOf(request), request.params.id);
        if (!found) throw moneyErrors.transactionNotFound();
        return found;
      },
    );
  },
});
