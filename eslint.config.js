import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

/**
 * One direction through the layers (DESIGN.md, Layout; docs/kernel.md, The layers): each folder
 * names the top-level folders it must not import, statically (import, export … from) or
 * dynamically (import()). app/, tests/, bench/ and scripts/ may import anything.
 */
const TOP = [
  'domain',
  'commands',
  'projections',
  'write-api',
  'read-api',
  'gateway',
  'workers',
  'infra',
  'app',
  'tests',
  'bench',
  'scripts',
  'sdk',
];

/** how deep the layer folders go (a file at depth d reaches the root with d × ../) */
const MAX_DEPTH = 6;

/**
 * A relative import, from a file `depth` folders below the root, of one of `folders` at the root
 * (from commands/money/x.ts: ../../projections/…). Depth-exact, so infra/projections/engine.ts is
 * infra's own and not the projections/ layer.
 */
const reaching = (depth, folders) => `^(\\./)?(\\.\\./){${depth}}(${folders.join('|')})(/|$)`;
/** a relative import of a bounded context of domain/ (any but domain/shared) */
const domainContext = (depth) => `^(\\./)?(\\.\\./){${depth}}domain/(?!shared(/|$))`;

/** esquery's regex literals cannot hold a slash: \x2F stands for it */
const importCall = (regex, message) => ({
  selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\x2F')}/]`,
  message,
});

/**
 * Every role answers HTTP through one host (infra/http/host.ts: problems, security headers, body
 * limits, drain); the edge and the services register plugins on it. Only the host creates Fastify.
 */
const HTTP_HOST = 'infra/http/host.ts';
const oneHttpHost = {
  selector: "ImportDeclaration[source.value='fastify'][importKind!='type'] > ImportDefaultSpecifier",
  message: `Fastify is created by the HTTP host only (${HTTP_HOST}): register a plugin on it instead.`,
};

const layer = (folder, { forbidden, contexts = false, packages, syntax = [], extra = () => [], why }) => {
  const base = folder.split('/').length;
  return Array.from({ length: MAX_DEPTH - base + 1 }, (_, i) => {
    const depth = base + i;
    const files = `${folder}/${'*/'.repeat(i)}*.ts`;
    const regexes = [reaching(depth, forbidden), ...(contexts ? [domainContext(depth)] : []), ...extra(depth)].map(
      (regex) => ({ regex, message: why }),
    );
    if (packages) regexes.push({ regex: packages.regex, message: packages.why });
    const rules = (host) => ({
      'no-restricted-imports': ['error', { patterns: regexes }],
      'no-restricted-syntax': [
        'error',
        ...regexes.map((r) => importCall(r.regex, r.message)),
        ...syntax,
        ...(host ? [] : [oneHttpHost]),
      ],
    });
    // the host's own file keeps its layer's rules, less the one that keeps Fastify in it
    const host = HTTP_HOST.startsWith(`${folder}/`) && HTTP_HOST.split('/').length === depth + 1;
    return [{ files: [files], rules: rules(false) }, ...(host ? [{ files: [HTTP_HOST], rules: rules(true) }] : [])];
  }).flat();
};

/** the bounded contexts of the command side (commands/<ctx>/), read when the lint loads */
const COMMAND_CONTEXTS = readdirSync(new URL('./commands', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

/**
 * From commands/<ctx>/…: any of projections/ but projections/<ctx>/queries and the files of
 * projections/<ctx>/shared/ — a context's commands read its own read models through the queries its
 * read side runs (one copy of each lookup) and use the runtime both of its sides share (identity's
 * access cache and key ring, notify's settings and socket bus), never a projection's handlers nor
 * another context's read side.
 */
const projectionsBut = (ctx) => (depth) => [
  `^(\\./)?(\\.\\./){${depth}}projections(/(?!${ctx}/(queries|shared/[^/]+?)(\\.[jt]s)?$)|$)`,
];

const others = (...allowed) => TOP.filter((folder) => !allowed.includes(folder));

export const layerRules = [
  ...layer('domain', {
    forbidden: others('domain'),
    packages: {
      regex: '^(?!zod(/|$))[^.]',
      why: 'The domain imports zod only: no I/O, no clock, no engines (DESIGN.md mechanism 6).',
    },
    // the pure core may not read the clock (DESIGN.md mechanism 6); parsing and formatting a stated time is pure
    syntax: [
      {
        selector: "NewExpression[callee.name='Date'][arguments.length=0]",
        message: 'Deciders get time from the command: new Date() reads the clock.',
      },
      {
        selector: "CallExpression[callee.name='Date']",
        message: 'Deciders get time from the command: Date() reads the clock.',
      },
    ],
    why: 'domain/ imports domain/ only.',
  }),
  ...layer('commands', {
    forbidden: others('domain', 'infra', 'commands'),
    why: 'commands/ imports domain/ and infra/ (read models through a lookup port of its own).',
  }),
  ...COMMAND_CONTEXTS.flatMap((ctx) =>
    layer(`commands/${ctx}`, {
      forbidden: others('domain', 'infra', 'commands', 'projections'),
      extra: projectionsBut(ctx),
      why: `commands/ imports domain/, infra/ and its own context's read queries and shared runtime (projections/${ctx}/queries, projections/${ctx}/shared/) only.`,
    }),
  ),
  ...layer('projections', {
    forbidden: others('domain', 'infra', 'projections'),
    why: 'projections/ imports domain/ and infra/.',
  }),
  ...layer('write-api', {
    forbidden: others('commands', 'domain', 'infra', 'write-api'),
    why: 'write-api/ imports commands/, domain/ and infra/ (the command returns what the route answers).',
  }),
  ...layer('read-api', {
    forbidden: others('projections', 'domain', 'infra', 'read-api'),
    why: 'read-api/ imports projections/, domain/ and infra/.',
  }),
  ...layer('workers', {
    forbidden: others('commands', 'projections', 'domain', 'infra', 'workers'),
    why: 'workers/ imports commands/, projections/, domain/ and infra/.',
  }),
  ...layer('gateway', {
    forbidden: others('infra', 'domain', 'gateway'),
    contexts: true,
    why: 'gateway/ imports infra/ and domain/shared only: services reach it as plugins or upstreams.',
  }),
  ...layer('infra', {
    forbidden: others('infra', 'domain'),
    contexts: true,
    why: 'infra/ imports no context and no API layer (domain/shared only); what a context owns is passed in.',
  }),
  ...layer('sdk', {
    forbidden: others('sdk'),
    packages: {
      regex: '^(?!openapi-fetch(/|$))[^.]',
      why: 'The SDK imports openapi-fetch only: it runs wherever fetch does (sdk/package.json names its dependencies).',
    },
    why: 'sdk/ imports sdk/ only: a client of the HTTP API, typed by its OpenAPI documents, never by its code.',
  }),
];

export default tseslint.config(
  // sdk/src/generated/: openapi-typescript's output, checked by tsc and by its drift test (tests/unit/sdk/drift.spec.ts)
  { ignores: ['node_modules/**', '.data/**', '.test-infra/**', 'coverage/**', '.scratch/**', 'sdk/src/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-non-null-assertion': 'warn',
      // async without await is how an adapter implements a Promise-returning port (caches, stores,
      // fakes), and async turns a synchronous throw into the rejection callers await: kept on purpose
      '@typescript-eslint/require-await': 'off',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  // The pure core may not reach for the clock or randomness (DESIGN.md mechanism 6); new Date() and Date() are refused with the layer rules.
  {
    files: ['domain/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Deciders get ids and randomness from the command.' },
        { object: 'Date', property: 'now', message: 'Deciders get time from the command.' },
      ],
    },
  },
  ...layerRules,
  // Tests read loosely typed response bodies (JSON from fetch, `any` by design in their clients):
  // the no-unsafe-* family would flag every field they check.
  {
    files: ['tests/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
  {
    files: ['app/cli/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'scripts/**/*.mjs', 'gateway/snapshot-cli.ts'],
    rules: { 'no-console': 'off' },
  },
);
