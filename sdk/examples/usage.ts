/**
 * The examples of sdk/README.md, type-checked with the repository (tsc, part of `npm test`): a
 * README whose calls no longer match the documents fails here. The @ts-expect-error lines are
 * what the types refuse.
 */
import { createPlatformClient, formData, idempotencyKey, problemCode } from '../src';

declare const accessToken: string;
declare const userId: string;
declare const bytes: Uint8Array;

export const example = async () => {
  const platform = createPlatformClient({ baseUrl: 'https://api.example.com', token: accessToken });
  const { data: wallet, error } = await platform.money.POST('/v1/wallets', {
    params: { header: { 'Idempotency-Key': idempotencyKey() } },
    body: { userId, currency: 'USD' },
  });
  if (error) throw new Error(`${error.status} ${error.title}: ${error.detail}`);
  const key = idempotencyKey();
  const credit = await platform.money.POST('/v1/wallets/{id}/credit', {
    params: { path: { id: wallet.id }, header: { 'Idempotency-Key': key } },
    body: { amount: 500, currency: 'USD' },
  });
  if (credit.error) {
    switch (problemCode(credit.error)) {
      case 'idempotency-conflict':
        break;
      case 'validation-error':
        for (const e of credit.error.errors ?? []) console.warn(e.field, e.message, e.code);
        break;
      case 'plan-limit-exceeded':
        console.warn(credit.error.resource, credit.error.limit, credit.error.currentUsage);
        break;
    }
  }
  const page = await platform.iam.GET('/v1/users', { params: { query: { page_size: 50 } } });
  for (const user of page.data?.data ?? []) console.warn(user.email);
  const uploaded = await platform.files.POST('/v1/files/upload', {
    body: { bucket: 'documents', originalName: 'report.pdf', file: new File([bytes], 'report.pdf') },
    bodySerializer: formData,
  });
  // @ts-expect-error money mutations require an Idempotency-Key
  await platform.money.POST('/v1/wallets', { body: { userId, currency: 'USD' } });
  // @ts-expect-error no such path
  await platform.money.GET('/v1/wallet');
  return uploaded.data?.id;
};
