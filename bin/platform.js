#!/usr/bin/env node
// The `platform` command. TypeScript runs through tsx's loader, so there is no build step to forget.
import { register } from 'tsx/esm/api';
register();
// tracing first: its instrumentations patch PostgreSQL, HTTP, Redis and Kafka as they load
await import('../infra/observability/instrument.ts');
await import('../app/cli/main.ts');
