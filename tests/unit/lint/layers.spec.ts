import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';

/*
 * The layer rules of eslint.config.js (one direction through the layers: DESIGN.md, Layout) fire
 * on a deliberate violation: each case writes a probe file into a layer folder, lints it with the
 * repository's own configuration through ESLint's Node API, and removes it. Only the layer rules
 * run (ruleFilter), without type information, so the check takes seconds.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LAYER_RULES = new Set(['no-restricted-imports', 'no-restricted-syntax']);
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
  ruleFilter: ({ ruleId }) => LAYER_RULES.has(ruleId),
});

const written = new Set<string>();
afterAll(async () => {
  for (const file of written) await rm(file, { force: true });
});

/** the layer rules' messages for `source` as a file at `path` (relative to the root) */
const lint = async (path: string, source: string): Promise<string[]> => {
  const file = join(ROOT, path.replace(/\.ts$/, `.probe-${process.pid}.ts`));
  written.add(file);
  await writeFile(file, source);
  try {
    const [result] = await eslint.lintFiles([file]);
    return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
  } finally {
    await rm(file, { force: true });
    written.delete(file);
  }
};

describe('the layer rules', () => {
  it.each([
    [
      'domain',
      'domain/identity/x.ts',
      "import { inTransaction } from '../../infra/postgres/db';",
      /domain\/ imports domain\/ only/,
    ],
    ['domain', 'domain/identity/x.ts', "import { readFile } from 'node:fs/promises';", /imports zod only/],
    ['domain', 'domain/identity/x.ts', "import pg from 'pg';", /imports zod only/],
    [
      'commands',
      'commands/identity/x.ts',
      "import { identityProjections } from '../../projections/identity';",
      /commands\/ imports domain\/, infra\/ and its own context's read queries and shared runtime \(projections\/identity\/queries, projections\/identity\/shared\/\)/,
    ],
    [
      'commands',
      'commands/identity/x.ts',
      "import { accountProjection } from '../../projections/identity/account';",
      /its own context's read queries/,
    ],
    [
      'commands',
      'commands/identity/x.ts',
      "import { findWallet } from '../../projections/money/queries';",
      /its own context's read queries and shared runtime \(projections\/identity\/queries/,
    ],
    [
      'commands',
      'commands/identity/x.ts',
      "import { socketBus } from '../../projections/notify/shared/socket-bus';",
      /its own context's read queries and shared runtime/,
    ],
    [
      'commands',
      'commands/notify/channels/x.ts',
      "export const load = () => import('../../../projections/identity/shared/runtime');",
      /its own context's read queries and shared runtime \(projections\/notify\/queries/,
    ],
    [
      'commands',
      'commands/notify/x.ts',
      "import { notifyProjections } from '../../projections/notify/shared/../index';",
      /its own context's read queries and shared runtime/,
    ],
    [
      'commands',
      'commands/notify/x.ts',
      "import { socketBus } from '../../projections/notify/shared/deeper/socket-bus';",
      /its own context's read queries and shared runtime/,
    ],
    [
      'commands',
      'commands/identity/x.ts',
      "export const load = () => import('../../projections/money/queries');",
      /its own context's read queries/,
    ],
    [
      'commands',
      'commands/identity/repositories/x.ts',
      "import { findUser } from '../../../projections/identity/queries-extra';",
      /its own context's read queries/,
    ],
    [
      'commands',
      'commands/identity/repositories/x.ts',
      "import { sessionRoutes } from '../../../write-api/identity/session';",
      /commands\/ imports domain\/, infra\//,
    ],
    [
      'commands',
      'commands/x.ts',
      "import { findUser } from '../projections/identity/queries';",
      /commands\/ imports domain\/ and infra\//,
    ],
    [
      'projections',
      'projections/identity/x.ts',
      "import { login } from '../../commands/identity/session';",
      /projections\/ imports domain\/ and infra\//,
    ],
    [
      'write-api',
      'write-api/identity/x.ts',
      "import { findUser } from '../../projections/identity/queries';",
      /write-api\/ imports commands\//,
    ],
    [
      'read-api',
      'read-api/identity/x.ts',
      "import { login } from '../../commands/identity/session';",
      /read-api\/ imports projections\//,
    ],
    [
      'read-api',
      'read-api/identity/x.ts',
      "import { sessionRoutes } from '../../write-api/identity/session';",
      /read-api\/ imports projections\//,
    ],
    [
      'workers',
      'workers/identity/x.ts',
      "import routes from '../../write-api/identity';",
      /workers\/ imports commands\/, projections\//,
    ],
    [
      'gateway',
      'gateway/x.ts',
      "import { login } from '../commands/identity/session';",
      /gateway\/ imports infra\/ and domain\/shared only/,
    ],
    [
      'gateway',
      'gateway/x.ts',
      "import { LIMITS } from '../domain/identity/constants';",
      /gateway\/ imports infra\/ and domain\/shared only/,
    ],
    [
      'infra',
      'infra/x.ts',
      "import { buildApp } from '../gateway/app';",
      /infra\/ imports no context and no API layer/,
    ],
    [
      'infra',
      'infra/security/x.ts',
      "import { accessOf } from '../../domain/identity/access';",
      /infra\/ imports no context and no API layer/,
    ],
    [
      'infra',
      'infra/runtime/x.ts',
      "export { startPlatform } from '../../app/platform';",
      /infra\/ imports no context and no API layer/,
    ],
    [
      'infra',
      'infra/runtime/x.ts',
      "export const load = () => import('../../commands/identity/account');",
      /infra\/ imports no context and no API layer/,
    ],
    [
      'infra',
      'infra/http/x.ts',
      "import { edgeDoor } from '../../gateway/edge';",
      /infra\/ imports no context and no API layer/,
    ],
    ['gateway', 'gateway/x.ts', "import Fastify from 'fastify';", /Fastify is created by the HTTP host only/],
    [
      'write-api',
      'write-api/files/x.ts',
      "import Fastify, { type FastifyInstance } from 'fastify';",
      /Fastify is created by the HTTP host only/,
    ],
    ['infra', 'infra/http/x.ts', "import Fastify from 'fastify';", /Fastify is created by the HTTP host only/],
    ['sdk', 'sdk/src/x.ts', "import { Money } from '../../domain/money/wallet';", /sdk\/ imports sdk\/ only/],
    ['sdk', 'sdk/src/x.ts', "import { z } from 'zod';", /The SDK imports openapi-fetch only/],
  ])(
    'refuses a violation in %s (%s: %s)',
    async (_layer, path, source, message) => {
      const messages = await lint(path, `${source}\n`);
      expect(messages.length, messages.join('\n')).toBeGreaterThan(0);
      expect(messages.join('\n')).toMatch(message);
    },
    60_000,
  );

  it('refuses reading the clock in the domain, and lets it parse a stated time', async () => {
    expect((await lint('domain/identity/x.ts', 'export const now = () => new Date();\n')).join('\n')).toMatch(
      /new Date\(\) reads the clock/,
    );
    expect(await lint('domain/identity/x.ts', 'export const at = (iso: string) => new Date(iso).getTime();\n')).toEqual(
      [],
    );
  }, 60_000);

  it.each([
    [
      'commands',
      'commands/identity/x.ts',
      "import { identityRuntime } from '../../projections/identity/shared/runtime';\nimport { LIMITS } from '../../domain/identity/constants';",
    ],
    ['commands', 'commands/identity/x.ts', "import { findTransaction } from '../money/lookups';"],
    ['commands', 'commands/identity/x.ts', "import { findUser } from '../../projections/identity/queries';"],
    [
      'commands',
      'commands/notify/channels/x.ts',
      "import { socketBus } from '../../../projections/notify/shared/socket-bus';\nimport { loadNotifySettings } from '../../../projections/notify/shared/settings';",
    ],
    [
      'commands',
      'commands/identity/repositories/x.ts',
      "import { findRole } from '../../../projections/identity/queries';",
    ],
    [
      'infra',
      'infra/projections/x.ts',
      "import { ProjectionEngine } from './engine';\nimport { sql } from '../projections/projection';\nimport { commonErrors } from '../../domain/shared/errors';",
    ],
    [
      'workers',
      'workers/identity/x.ts',
      "import { login } from '../../commands/identity/session';\nimport { findUser } from '../../projections/identity/queries';",
    ],
    ['app', 'app/x.ts', "import { buildApp } from '../gateway/app';\nimport routes from '../write-api/identity';"],
    [
      'gateway',
      'gateway/x.ts',
      "import type { FastifyInstance } from 'fastify';\nimport { hostWide } from '../infra/http/host';",
    ],
    ['domain', 'domain/identity/x.ts', "import { z } from 'zod';\nimport { commonErrors } from '../shared/errors';"],
  ])(
    'lets %s import what it may (%s)',
    async (_layer, path, source) => {
      expect(await lint(path, `${source}\n`)).toEqual([]);
    },
    60_000,
  );

  it('lets the HTTP host create Fastify, and keeps its layer rules there', async () => {
    const [host] = await eslint.lintFiles([join(ROOT, 'infra/http/host.ts')]);
    expect((host?.messages ?? []).map((m) => m.message)).toEqual([]);
    const [probe] = await eslint.lintText(
      "import Fastify from 'fastify';\nimport { buildApp } from '../../gateway/app';\n",
      {
        filePath: join(ROOT, 'infra/http/host.ts'),
      },
    );
    const messages = (probe?.messages ?? []).map((m) => m.message).join('\n');
    expect(messages).toMatch(/infra\/ imports no context and no API layer/);
    expect(messages).not.toMatch(/Fastify is created by the HTTP host only/);
  }, 60_000);
});
