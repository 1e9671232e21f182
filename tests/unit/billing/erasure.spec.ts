import { describe, expect, it } from 'vitest';
import type { ErasureCommand } from '../../../domain/shared/erasure';
import { ERASURE_REQUESTED, erasureDecider } from '../../../domain/shared/erasure';
import { commandScenario } from '../../support/decider-scenario';

/** the erasure journal: billing's requests and each service's confirmations, every command one event */
const { given } = commandScenario(erasureDecider);
const request: ErasureCommand = {
  type: 'Request',
  request: { terminationId: 's1@2026-01-01', subscriptionId: 's1', phase: 'deleting_records' },
};
const confirm: ErasureCommand = {
  type: 'Confirm',
  domain: 'files',
  confirmation: { terminationId: 's1@2026-01-01', phase: 'deleting_files', service: 'files' },
};

describe('the erasure journal', () => {
  it('records a request as billing.tenant.erasure_requested', () =>
    given()
      .when(request)
      .then([{ type: ERASURE_REQUESTED, data: request.request }]));
  it("records a service's confirmation as <domain>.tenant.erased", () =>
    given(request)
      .when(confirm)
      .then([{ type: 'files.tenant.erased', data: confirm.confirmation }]));
  it('records a repeated request or confirmation again (harmless: readers look for at least one)', () =>
    given(request, confirm)
      .when(confirm)
      .then((events, after) => {
        expect(events).toHaveLength(1);
        expect(after.count).toBe(3);
      }));
});
