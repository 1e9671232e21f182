import { defineProjections } from '../../infra/services';
import { accounts } from './account';
import { members } from './membership';
import { roles } from './role';
import { tenants } from './tenant';

/**
 * Identity read models, all inline (a login right after registration must see the account). Each
 * parses its events with the domain's zod unions; accounts live in the platform pseudo-tenant;
 * memberships, roles and tenants in their tenant.
 */
export { accounts, members, roles, tenants };

export default defineProjections({ projections: [accounts, members, roles, tenants] });
