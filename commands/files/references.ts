import type { Bucket } from '../../domain/files/constants';
import type { People } from '../../infra/people';
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

/** the platform's references: avatars named by the accounts of the tenant's members (the directory of people) */
export const platformReferences = (people: People): FileReferences => ({
  async unreferenced(q, tenantId, files) {
    const avatars = files.filter((f) => f.bucket === 'avatars').map((f) => f.id);
    if (avatars.length === 0) return new Set();
    try {
      const inUse = await people.avatarsInUse(q, tenantId, avatars);
      return new Set(avatars.filter((id) => !inUse.has(id)));
    } catch {
      return new Set();
    }
  },
});
