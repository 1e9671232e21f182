import { z } from 'zod';
import { commonErrors } from '../../domain/shared/errors';

/**
 * The page envelope of every list endpoint: {data, next_page_token}. page_size is 1..100
 * (default 20); page_token is opaque to clients: a base64url-encoded keyset cursor.
 */
export const pageQuery = {
  page_size: z
    .string()
    .regex(/^\d+$/, 'page_size must be an integer from 1 to 100')
    .transform(Number)
    .pipe(z.number().int().min(1, 'page_size must be at least 1').max(100, 'page_size must be at most 100'))
    .default(20)
    // a query parameter is text on the wire; what it must hold is an integer from 1 to 100
    .meta({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
      pattern: undefined,
      description: 'items per page, 1 to 100',
    }),
  page_token: z.string().max(512).optional().describe('the next_page_token of the previous page, as it was given'),
};

export const pageEnvelope = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    next_page_token: z.string().optional(),
  });

export type Cursor = Record<string, string | number | null>;

export const encodeCursor = (cursor: Cursor): string => Buffer.from(JSON.stringify(cursor)).toString('base64url');

/** a key of a cursor made of text: what our queries compare it with (no NUL: PostgreSQL text cannot hold one) */
const CursorText = z
  .string()
  .min(1)
  .max(256)
  .refine((s) => !s.includes('\0'));

const invalidToken = () =>
  commonErrors.validation([
    { field: 'page_token', message: 'page_token is not a valid page token', code: 'INVALID_PAGE_TOKEN' },
  ]);

/**
 * Decodes a page_token. A token that was not made by encodeCursor — unparsable, or with a field of
 * the wrong type, length or content (a hand-made or tampered token) — is a 400, never a failing
 * query: with a list of keys every one must be text; with a zod schema the cursor must match it.
 */
export function decodeCursor(token: string | undefined, keys: string[]): Record<string, string> | null;
export function decodeCursor<T>(token: string | undefined, schema: z.ZodType<T>): T | null;
export function decodeCursor(token: string | undefined, shape: string[] | z.ZodType): unknown {
  if (!token) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalidToken();
  }
  const schema = Array.isArray(shape) ? z.object(Object.fromEntries(shape.map((k) => [k, CursorText]))) : shape;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidToken();
  return parsed.data;
}

/**
 * Builds a page from size + 1 fetched rows: the extra row only tells that there is a next page.
 */
export const toPage = <Row, Item>(
  rows: Row[],
  pageSize: number,
  toItem: (r: Row) => Item,
  cursorOf: (r: Row) => Cursor,
): { data: Item[]; next_page_token?: string } => {
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  return rows.length > pageSize && last
    ? { data: page.map(toItem), next_page_token: encodeCursor(cursorOf(last)) }
    : { data: page.map(toItem) };
};
