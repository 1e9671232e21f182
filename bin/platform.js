#!/usr/bin/env node
// The `platform` command. TypeScript runs through tsx's loader, so there is no build step to forget.
import { register } from 'tsx/esm/api';
register();
await import('../app/cli/main.ts');
