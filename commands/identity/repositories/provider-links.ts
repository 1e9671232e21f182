import type { Queryable } from '../../../infra/postgres/db';
import { PgCode, pgErrorCode } from '../../../infra/postgres/db';

/**
 * identity.provider_links: which user holds an external identity — (provider, external id) is
 * unique across all users, and a user has one link per provider. The links as shown are in the
 * read model (rm.iam_provider_links, from auth.user.provider_linked).
 */
export const providerLinks = {
  holderOf: async (q: Queryable, providerId: string, externalId: string): Promise<string | null> =>
    (
      await q.query<{ user_id: string }>(
        'SELECT user_id FROM identity.provider_links WHERE provider_id = $1 AND external_id = $2',
        [providerId, externalId],
      )
    ).rows[0]?.user_id ?? null,

  /** false when the identity (or a link of the user to the provider) is held already */
  async insert(
    q: Queryable,
    link: { id: string; userId: string; providerId: string; externalId: string },
  ): Promise<boolean> {
    try {
      await q.query(
        'INSERT INTO identity.provider_links (id, user_id, provider_id, external_id) VALUES ($1, $2, $3, $4)',
        [link.id, link.userId, link.providerId, link.externalId],
      );
      return true;
    } catch (error) {
      if (pgErrorCode(error) === PgCode.uniqueViolation) return false;
      throw error;
    }
  },

  async delete(q: Queryable, userId: string, providerId: string): Promise<void> {
    await q.query('DELETE FROM identity.provider_links WHERE user_id = $1 AND provider_id = $2', [userId, providerId]);
  },
};
