import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { overlayOf, redact, REDACTED, ruleFor } from '../../../domain/audit/anonymization';
import { exportFormat, planExport } from '../../../domain/audit/export';
import { actionFilter } from '../../../domain/audit/filters';
import type { AuditRecordView } from '../../../domain/audit/record';
import { recordOfAuditEvent, recordOfDomainEvent } from '../../../domain/audit/sources';
import type { StoredEvent } from '../../../domain/shared/event';
import { toAuditRecord } from '../../../gateway/audit';
import { decodeEvent } from '../../../infra/events/envelope';
import { parseCommandLine } from '../../../app/cli/commands';
import { chain, chainLinks, LINK_FIELDS, START, verifyPage } from '../../../commands/audit/chain';
import { rowOf } from '../../../domain/audit/rows';

const digest = (v: string) => createHash('sha256').update(`k:${v}`).digest('hex');
const unchained = (i: number) =>
  rowOf({
    id: `id-${i}`,
    tenantId: 't',
    action: 'a.b.c',
    entityType: 'e',
    entityId: `x-${i}`,
    actorId: 'u',
    after: { i },
    timestamp: `2026-01-01T00:00:0${i}.000Z`,
  });

describe('a tenant chain of three records', () => {
  const { rows, head } = chain(START, [1, 2, 3].map(unchained));

  it('links each record to the previous hash and numbers them from 1', () => {
    expect(rows.map((r) => r.seq)).toEqual(['1', '2', '3']);
    expect(rows[1]!.prev_hash).toBe(rows[0]!.hash);
    expect(head).toEqual({ seq: 3, hash: rows[2]!.hash });
    expect(verifyPage(START, rows).broken).toBeNull();
  });

  it('continues from a head exactly as it would have in one go', () => {
    const first = chain(START, [1].map(unchained));
    expect(chain(first.head, [2, 3].map(unchained)).rows).toEqual(rows.slice(1));
  });

  it('reports an altered value, a removed record and a rewritten hash', () => {
    expect(verifyPage(START, [rows[0]!, { ...rows[1]!, after: '{"i":9}' }, rows[2]!]).broken).toMatchObject({
      seq: '2',
      reason: 'altered',
    });
    expect(verifyPage(START, [rows[0]!, rows[2]!]).broken).toMatchObject({ seq: '3', reason: 'gap' });
    const forged = { ...rows[1]!, after: '{"i":9}' };
    const rehashed = chain({ seq: 1, hash: rows[0]!.hash }, [forged]).rows[0]!;
    expect(verifyPage(START, [rows[0]!, rehashed, rows[2]!]).broken).toMatchObject({ seq: '3', reason: 'broken-link' });
  });
});

describe('the hash of a record', () => {
  // fixed vectors: a record's hash is what stored chains were linked with, so the text it covers
  // (JSON of version, links and fields) must never drift, however the consumer builds it
  const rows = [
    rowOf({
      id: 'id-1',
      tenantId: 't',
      action: 'a.b.c',
      entityType: 'e',
      entityId: 'x-1',
      actorId: 'u',
      after: { i: 1, s: 'é "q" \\ \n \u2028 😀' },
      timestamp: '2026-01-01T00:00:01.000Z',
    }),
    rowOf({
      id: 'id-2',
      tenantId: 't',
      action: 'a.b.c',
      entityType: 'e',
      entityId: 'x-2',
      actorId: 'u',
      actorIp: '10.0.0.1',
      actorUserAgent: 'ua "x"',
      before: { a: null },
      meta: { m: [1, 2] },
      traceId: 'abc',
      timestamp: '2026-01-01 00:00:02.5',
    }),
  ];

  it('is SHA-256 over the same text as ever', () => {
    expect(chain(START, rows).rows.map((r) => r.hash)).toEqual([
      '3c9795e5c5685052ac6fe051567fe332fb0fe34181b72fdc016e723570048b69',
      'feda995dd8b1940a12ab02a2558699e83c505d5fdd034d7f9df476cfd4c56b33',
    ]);
  });

  it('is the same when the consumer chains records as JSON text for its insert', () => {
    const head = { seq: 41, hash: 'f'.repeat(64) };
    const expected = chain(head, rows);
    const { links, head: after } = chainLinks(head, rows);
    expect(after).toEqual(expected.head);
    links.forEach((link, i) => {
      const row = expected.rows[i]!;
      expect(link).toMatchObject({ tenant_id: 't', seq: Number(row.seq), prev_hash: row.prev_hash, hash: row.hash });
      // the text is the fields' JSON, timestamp normalized as the hash takes it
      expect(JSON.parse(`[${link.fields}]`)).toEqual(LINK_FIELDS.map((f) => row[f]));
    });
    expect(verifyPage(head, expected.rows).broken).toBeNull();
  });
});

describe('the anonymization overlay', () => {
  const record = (over: Partial<AuditRecordView>): AuditRecordView => ({
    id: 'r',
    action: 'auth.user.created',
    entityType: 'account',
    entityId: 'u-1',
    actorId: 'u-1',
    actorIp: '10.1.2.3',
    actorUserAgent: 'ua',
    tenantId: 't',
    before: null,
    after: { email: 'Ada@Example.test', firstName: 'Ada', note: 'mail ada@example.test now', other: 'Adam' },
    meta: { list: ['Lovelace'] },
    traceId: null,
    timestamp: '2026-01-01T00:00:00.000Z',
    ...over,
  });
  const overlay = overlayOf([ruleFor('u-1', ['ada@example.test', 'Ada', 'Lovelace', 'Ada Lovelace'], digest)], digest);

  it('replaces the user values wherever they stand, and the address and agent of records they acted in', () => {
    expect(redact(record({}), overlay)).toMatchObject({
      actorIp: '0.0.0.0',
      actorUserAgent: null,
      after: { email: REDACTED, firstName: REDACTED, note: `mail ${REDACTED} now`, other: 'Adam' },
      meta: { list: [REDACTED] },
    });
  });

  it('leaves the address of records someone else acted in, and money records entirely', () => {
    expect(redact(record({ actorId: 'admin' }), overlay)).toMatchObject({
      actorIp: '10.1.2.3',
      actorUserAgent: 'ua',
      after: { email: REDACTED },
    });
    expect(redact(record({ action: 'money.wallet.credited' }), overlay)).toEqual(
      record({ action: 'money.wallet.credited' }),
    );
  });

  it('covers impersonated actions of the user and keeps no personal value in the rule', () => {
    expect(redact(record({ actorId: 'u-1 (by owner)' }), overlay).actorIp).toBe('0.0.0.0');
    expect(JSON.stringify(ruleFor('u-1', ['ada@example.test'], digest))).not.toContain('ada');
  });
});

describe('export plans', () => {
  const now = new Date('2026-06-01T00:00:00Z');
  const day = 86_400_000;
  it('streams a hot range, refuses one over the hot days, and sends one reaching back to cold storage to a job', () => {
    expect(planExport({ since: new Date(now.getTime() - 10 * day), until: now, now, hotDays: 90 })).toBe('hot');
    expect(() =>
      planExport({
        since: new Date(now.getTime() - 10 * day),
        until: new Date(now.getTime() + 81 * day),
        now,
        hotDays: 90,
      }),
    ).toThrow(expect.objectContaining({ suffix: 'export-range-too-large' }));
    expect(planExport({ since: new Date(now.getTime() - 91 * day), until: now, now, hotDays: 90 })).toBe('cold');
    expect(() => planExport({ since: now, until: now, now, hotDays: 90 })).toThrow(
      expect.objectContaining({ suffix: 'validation-error' }),
    );
  });

  it('quotes CSV cells that hold commas, quotes or line breaks', () => {
    const f = exportFormat('csv');
    const line = f.item(
      {
        id: 'a,b',
        action: 'x',
        entityType: 'e',
        entityId: 'i',
        actorId: 'u',
        actorIp: null,
        actorUserAgent: 'say "hi"',
        tenantId: 't',
        before: null,
        after: { k: 'v' },
        meta: null,
        traceId: null,
        timestamp: 't',
      },
      0,
    );
    expect(line).toBe('"a,b",t,t,x,e,i,u,,"say ""hi""",,,"{""k"":""v""}",\r\n');
  });
});

describe('sources of records', () => {
  it('maps a login of the platform pseudo-tenant to the tenant it names, with the stream as entity', () => {
    const e = {
      eventId: 'e1',
      type: 'auth.user.logged_in',
      schemaVersion: 1,
      tenantId: '00000000-0000-0000-0000-000000000000',
      actorId: 'u-1',
      traceId: 'tr',
      causationId: null,
      correlationId: 'tr',
      occurredAt: '2026-01-01T00:00:00.000Z',
      streamId: 'identity.account:00000000-0000-0000-0000-000000000000:u-1',
      streamVersion: 3,
      position: 1n,
      transactionId: 1n,
      data: { userId: 'u-1', tenantId: 'tenant-x', method: 'password' },
    } as StoredEvent<Record<string, unknown>>;
    expect(recordOfDomainEvent(e)).toMatchObject({
      id: 'e1',
      tenantId: 'tenant-x',
      action: 'auth.user.logged_in',
      entityType: 'account',
      entityId: 'u-1',
      actorId: 'u-1',
      after: e.data,
      before: null,
    });
    expect(
      recordOfDomainEvent({
        ...e,
        type: 'auth.user.email_changed',
        data: { userId: 'u-1', email: 'new@x', previousEmail: 'old@x' },
      }).before,
    ).toEqual({ email: 'old@x' });
  });

  it('maps an anonymous API call to the platform tenant and skips what is not a record', () => {
    const call = toAuditRecord(
      {
        method: 'POST',
        route: '/v1/auth/login',
        status: 401,
        latencyMs: 3,
        actorId: null,
        tenantId: null,
        clientAddress: '1.2.3.4',
        userAgent: 'ua',
        traceId: 'tr',
        occurredAt: '2026-01-01T00:00:00.000Z',
      },
      '0190a0a0-0000-7000-8000-000000000001',
    );
    expect(recordOfAuditEvent(decodeEvent(call.value)!)).toMatchObject({
      tenantId: '00000000-0000-0000-0000-000000000000',
      actorId: 'anonymous',
      entityId: 'POST /v1/auth/login',
      actorIp: '1.2.3.4',
    });
    // a record written before the envelope was the spec's (still on the log, or in the outbox) reads the same
    const legacy = JSON.stringify({
      eventId: '0190a0a0-0000-7000-8000-000000000002',
      type: 'audit.api.called',
      schemaVersion: 1,
      tenantId: null,
      actorId: 'u-1',
      traceId: 'tr',
      occurredAt: '2026-01-01T00:00:00.000Z',
      data: { method: 'GET', route: null, status: 404, latencyMs: 1, clientAddress: null, userAgent: null },
    });
    expect(recordOfAuditEvent(decodeEvent(legacy)!)).toMatchObject({ actorId: 'u-1', entityId: 'GET (no route)' });
    expect(decodeEvent('{"type":"other"}')).toBeNull();
    expect(decodeEvent('not json')).toBeNull();
  });
});

describe('filters and the command line', () => {
  it('reads an action as exact or as a prefix', () => {
    expect(actionFilter('money.*')).toEqual({ prefix: 'money.' });
    expect(actionFilter('money.wallet.credited')).toEqual({ exact: 'money.wallet.credited' });
    expect(() => actionFilter('money.*.x')).toThrow();
  });

  it('parses platform audit verify with and without a tenant', () => {
    expect(parseCommandLine(['audit', 'verify'])).toEqual({ command: 'audit', action: 'verify', tenant: undefined });
    expect(parseCommandLine(['audit', 'verify', '--tenant', 't-1'])).toEqual({
      command: 'audit',
      action: 'verify',
      tenant: 't-1',
    });
    expect(() => parseCommandLine(['audit', 'check'])).toThrow(/audit needs verify/);
    expect(() => parseCommandLine(['audit', 'verify', '--all'])).toThrow(/Unknown option/);
  });
});
