import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.test-infra/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  // The pure core may not reach for the outside world (DESIGN.md mechanism 6).
  {
    files: ['domain/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error', { name: 'Date', message: 'Deciders get time from the command.' }],
      'no-restricted-properties': ['error', { object: 'Math', property: 'random', message: 'Deciders get ids and randomness from the command.' }],
      'no-restricted-imports': ['error', { patterns: ['node:*', '../../infra/*', '../../commands/*', 'pg', 'kafkajs', 'ioredis'] }],
    },
  },
  { files: ['**/*.js', '**/*.mjs'], languageOptions: { globals: globals.node } },
  { files: ['app/cli/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'scripts/**/*.mjs', 'gateway/snapshot-cli.ts'], rules: { 'no-console': 'off' } },
);
