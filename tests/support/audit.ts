import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import auditProjections from '../../projections/audit';
import auditRead from '../../read-api/audit';
import auditWrite from '../../write-api/audit';
import auditWorkers from '../../workers/audit';
import { testToken } from './auth';
import { pollUntil } from './poll';

/** the audit service's modules, as discovery would find them */
export const auditServices: ServiceParts = mergeServiceParts({
  write: [auditWrite],
  read: [auditRead],
  projections: auditProjections.projections,
  workers: [auditWorkers],
});

export const AUDIT_PERMISSIONS = ['audit.read', 'audit.export', 'audit.anonymize'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = any;

export interface AuditClient {
  token: string;
  call(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Body; headers: Headers; text: string }>;
}

/** an HTTP client of the audit API as one user of one tenant */
export const auditClient = (
  baseUrl: string,
  tenantId: string,
  userId: string,
  permissions: string[] = AUDIT_PERMISSIONS,
  token = testToken(tenantId, userId, permissions),
): AuditClient => ({
  token,
  async call(method, path, body, headers = {}) {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* a file */
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  },
});

/** polls until probe answers something truthy */
export const eventually = async <T>(
  probe: () => Promise<T | null | undefined | false>,
  ms = 30_000,
  every = 50,
): Promise<T> => (await pollUntil(probe, Boolean, { timeoutMs: ms, everyMs: every })) as T;

/** RFC 4180 CSV → rows of cells */
export const parseCsv = (text: string): string[][] => {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r') {
      /* part of \r\n */
    } else if (c === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
};
