import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Bucket } from '../../domain/files/constants';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Whether anything still points at a file (spec 002: files with no references, older than 24 h,
 * are orphans). The platform knows one kind of reference today: an account's avatar URL naming an
 * avatars file. Files of the other buckets are the tenant's own content, reached by id, and count
 * as referenced unless a module installs a source that says otherwise (configureFiles).
 * On any doubt (a lookup that fails) a file counts as referenced: nothing is deleted on a guess.
 */
export interface FileReferences {
  /** of these files of the tenant, the ids nothing refers to */
  unreferenced(q: Queryable, tenantId: string, files: { id: string; bucket: Bucket }[]): Promise<Set<string>>;
}

export const platformReferences: FileReferences = {
  async unreferenced(q, tenantId, files) {
    const avatars = files.filter((f) => f.bucket === 'avatars').map((f) => f.id);
    if (avatars.length === 0) return new Set();
    try {
      const { rows } = await q.query<{ id: string }>(
        `SELECT f.id FROM unnest($2::text[]) AS f(id)
         WHERE NOT EXISTS (SELECT 1 FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
                           WHERE m.tenant_id = $1 AND strpos(a.avatar_url, f.id) > 0)`,
        [tenantId, avatars, PLATFORM_TENANT_ID],
      );
      return new Set(rows.map((r) => r.id));
    } catch {
      return new Set();
    }
  },
};
