import { z } from 'zod';
import { commonErrors } from '../../domain/shared/errors';

/**
 * The page envelope of every list endpoint: {data, next_page_token}. page_size is 1..100
 * (default 20); page_token is opaque to clients: a base64url-encoded keyset cursor.
 */
export const pageQuery = {
  page_size: z.string().regex(/^\d+$/, 'page_size must be an integer from 1 to 100')
    .transform(Number).pipe(z.number().int().min(1, 'page_size must be at least 1').max(100, 'page_size must be at most 100'))
    .default(20),
  page_token: z.string().max(512).optional(),
};

export const pageEnvelope = <T extends z.ZodType>(item: T) => z.object({
  data: z.array(item),
  next_page_token: z.string().optional(),
});

export type Cursor = Record<string, string | number>;

export const encodeCursor = (cursor: Cursor): string => Buffer.from(JSON.stringify(cursor)).toString('base64url');

/** decodes a page_token; a token that was not made by encodeCursor is a 400, not a crash */
export const decodeCursor = (token: string | undefined, keys: string[]): Cursor | null => {
  if (!token) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (value && typeof value === 'object' && keys.every((k) => k in value)) return value as Cursor;
  } catch { /* fall through */ }
  throw commonErrors.validation([{ field: 'page_token', message: 'page_token is not a valid page token', code: 'INVALID_PAGE_TOKEN' }]);
};

/**
 * Builds a page from size + 1 fetched rows: the extra row only tells that there is a next page.
 */
export const toPage = <Row, Item>(rows: Row[], pageSize: number, toItem: (r: Row) => Item, cursorOf: (r: Row) => Cursor): { data: Item[]; next_page_token?: string } => {
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  return rows.length > pageSize && last ? { data: page.map(toItem), next_page_token: encodeCursor(cursorOf(last)) } : { data: page.map(toItem) };
};
