import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Queryable } from '../../infra/postgres/db';
import { pgErrorCode } from '../../infra/postgres/db';

/**
 * What the audit service reads of identity, through identity's read models (never its streams):
 * the personal values of a user that an anonymization hides. Accounts live in the platform
 * pseudo-tenant; membership says whether the user belongs to the asking tenant.
 */
export interface Person {
  userId: string;
  member: boolean;
  /** email, names, linked identities' emails and display names */
  values: string[];
}

const UNDEFINED_TABLE = '42P01';

export const findPerson = async (q: Queryable, tenantId: string, userId: string): Promise<Person | null> => {
  try {
    const { rows: [account] } = await q.query<{ email: string; first_name: string; last_name: string }>(
      'SELECT email, first_name, last_name FROM rm.iam_accounts WHERE tenant_id = $1 AND id = $2', [PLATFORM_TENANT_ID, userId]);
    if (!account) return null;
    const member = ((await q.query('SELECT 1 FROM rm.iam_members WHERE tenant_id = $1 AND user_id = $2', [tenantId, userId])).rowCount ?? 0) > 0;
    const { rows: links } = await q.query<{ email: string; display_name: string }>(
      'SELECT email, display_name FROM rm.iam_provider_links WHERE tenant_id = $1 AND user_id = $2', [PLATFORM_TENANT_ID, userId]);
    const names = [account.first_name, account.last_name, `${account.first_name} ${account.last_name}`];
    return { userId, member, values: [account.email, ...names, ...links.flatMap((l) => [l.email, l.display_name])] };
  } catch (error) {
    // a platform without identity installed: nobody's personal values are known
    if (pgErrorCode(error) === UNDEFINED_TABLE) return null;
    throw error;
  }
};
