import { resolve } from 'node:path';
import type { Kernel } from '../../infra/kernel';
import { readModuleFolder } from './module-folder';

/**
 * `platform modules …`: the module registry from the command line, as the platform owner (beside a
 * running `npm start` with the same DATA_DIR, like `platform owner create`). Kept in its own file
 * so the CLI can move as a whole.
 */
export type ModulesInvocation =
  | { command: 'modules'; action: 'list' }
  | { command: 'modules'; action: 'register'; folder: string }
  | { command: 'modules'; action: 'update'; folder: string }
  | { command: 'modules'; action: 'status' | 'retry' | 'delete'; slug: string }
  | { command: 'modules'; action: 'install' | 'activate' | 'deactivate'; slug: string; tenant: string }
  | { command: 'modules'; action: 'force-version'; slug: string; version: number }
  | { command: 'modules'; action: 'purge'; slug: string; confirmed: boolean };

export const MODULES_USAGE = `  platform modules list                            registered modules, their version and status
  platform modules register <folder>               register a module from manifest.json + migrations/NNNN_*.sql (prints its first key)
  platform modules update <folder>                 publish a new version (migrates its installed tenants)
  platform modules install <slug> --tenant <id>    run pending migrations, activate for the tenant
  platform modules activate|deactivate <slug> --tenant <id>
  platform modules status|retry|delete <slug>      show (status, migrationError) / retry a failed migration / soft delete
  platform modules force-version <slug> <n>        declare the schema at version n and clear the dirty flag
  platform modules purge <slug> --yes              drop a deleted module's schema and rows (irreversible)`;

type Options = (args: string[]) => { tenant?: string; yes?: boolean; positionals: string[] };

export const parseModules = (
  args: string[],
  options: Options,
  usage: (message: string) => Error,
): ModulesInvocation => {
  const [action, ...rest] = args;
  const { tenant, yes, positionals } = options(rest);
  const one = (what: string): string => {
    if (positionals.length !== 1) throw usage(`modules ${action} needs ${what}`);
    return positionals[0]!;
  };
  switch (action) {
    case 'list':
      return { command: 'modules', action };
    case 'register':
    case 'update':
      return { command: 'modules', action, folder: one("the module's folder (manifest.json, migrations/)") };
    case 'status':
    case 'retry':
    case 'delete':
      return { command: 'modules', action, slug: one('a slug') };
    case 'install':
    case 'activate':
    case 'deactivate':
      if (!tenant) throw usage(`modules ${action} needs --tenant <id>`);
      return { command: 'modules', action, slug: one('a slug'), tenant };
    case 'force-version': {
      if (positionals.length !== 2 || !/^\d+$/.test(positionals[1]!))
        throw usage('modules force-version needs <slug> <n> (a whole number)');
      return { command: 'modules', action, slug: positionals[0]!, version: Number(positionals[1]) };
    }
    case 'purge':
      return { command: 'modules', action, slug: one('a slug'), confirmed: yes === true };
    default:
      throw usage(
        'modules needs list, register, update, install, activate, deactivate, status, retry, delete, force-version or purge',
      );
  }
};

const ACTOR = 'cli:platform-owner';

export const runModules = async (kernel: Kernel, inv: ModulesInvocation): Promise<number> => {
  const lifecycle = await import('../../commands/modules/lifecycle');
  const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));
  switch (inv.action) {
    case 'list': {
      const { allManifests } = await import('../../commands/modules/lookups');
      for (const m of await allManifests(kernel.db)) console.log(`${m.slug}\t${m.manifest.version}`);
      return 0;
    }
    case 'register': {
      const { registerModule, registryMeta } = await import('../../commands/modules/register');
      const { issueKey } = await import('../../commands/modules/keys');
      const manifest = await readModuleFolder(resolve(inv.folder));
      print(
        await kernel.commands.run(registryMeta(ACTOR, null), async (uow) => {
          const module = await registerModule(kernel, uow, manifest, ACTOR);
          return { ...module, credentials: await issueKey(kernel, uow.tx, module.id, ACTOR) };
        }),
      );
      return 0;
    }
    case 'update': {
      const manifest = await readModuleFolder(resolve(inv.folder));
      const view = await lifecycle.updateModule(kernel, ACTOR, null, manifest.slug, manifest);
      print(view);
      return view.status === 'error' ? 1 : 0;
    }
    case 'install':
      print(await lifecycle.installModule(kernel, ACTOR, null, inv.slug, inv.tenant));
      return 0;
    case 'activate':
      print(await lifecycle.activateModule(kernel, ACTOR, null, inv.slug, inv.tenant));
      return 0;
    case 'deactivate':
      print(await lifecycle.deactivateModule(kernel, ACTOR, null, inv.slug, inv.tenant));
      return 0;
    case 'status': {
      const view = await lifecycle.moduleStatusView(kernel, inv.slug);
      print(view);
      return view.status === 'error' ? 1 : 0;
    }
    case 'retry': {
      const view = await lifecycle.retryMigrations(kernel, inv.slug);
      print(view);
      return view.status === 'error' ? 1 : 0;
    }
    case 'force-version':
      print(await lifecycle.forceModuleVersion(kernel, inv.slug, inv.version));
      return 0;
    case 'delete':
      await lifecycle.deleteModule(kernel, ACTOR, null, inv.slug);
      console.log(`deleted ${inv.slug} (its schema stays until \`platform modules purge ${inv.slug} --yes\`)`);
      return 0;
    case 'purge':
      if (!inv.confirmed) {
        console.error(`purge drops module_${inv.slug} and every row in it: run again with --yes`);
        return 2;
      }
      await lifecycle.purgeModule(kernel, ACTOR, inv.slug);
      console.log(`purged ${inv.slug}`);
      return 0;
  }
};
