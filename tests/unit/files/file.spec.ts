import { describe, expect, it } from 'vitest';
import {
  at,
  completeJob,
  failJob,
  given,
  purge,
  reject,
  release,
  remove,
  restore,
  stage,
  startJob,
  thumbnail,
} from './fixtures';

const types = (events: { type: string }[]) => events.map((e) => e.type);

describe('no file', () => {
  it('stages one: pending_scan', () =>
    given()
      .when(stage())
      .then((events, after) => {
        expect(types(events)).toEqual(['files.file.staged']);
        expect(after.status).toBe('pending_scan');
      }));
  it('answers file-not-found to a delete, a restore and a permanent delete', () => {
    given().when(remove()).thenFails('file-not-found', 404);
    given()
      .when(restore(at(1)))
      .thenFails('file-not-found', 404);
    given().when(purge()).thenFails('file-not-found', 404);
  });
  it('records no release of a file it never staged', () =>
    given()
      .when(release())
      .then((events) => expect(events).toEqual([])));
});

describe('a file pending its scan', () => {
  const pending = [stage()] as const;
  it('is released by a clean verdict, carrying its size for billing', () =>
    given(...pending)
      .when(release())
      .then((events, after) => {
        expect(types(events)).toEqual(['files.file.uploaded']);
        expect(events[0]!.data).toMatchObject({
          fileId: expect.any(String),
          tenantId: 'tenant-1',
          sizeBytes: 1000,
          scanStatus: 'clean',
        });
        expect(after).toMatchObject({ status: 'available', contentVersion: 1 });
      }));
  it('is rejected by an infected verdict, with the signature', () =>
    given(...pending)
      .when(reject())
      .then((events, after) => {
        expect(events[0]).toMatchObject({
          type: 'files.file.rejected',
          data: { reason: 'infected', signature: 'Eicar-Test-Signature' },
        });
        expect(after.status).toBe('rejected');
      }));
  it('cannot be deleted, restored or processed: it does not exist for clients yet', () => {
    given(...pending)
      .when(remove())
      .thenFails('file-not-found', 404);
    given(...pending)
      .when(startJob())
      .thenFails('file-not-found', 404);
  });
  it('is not staged twice', () =>
    given(...pending)
      .when(stage())
      .then((events) => expect(events).toEqual([])));
});

describe('a rejected file', () => {
  const rejected = [stage(), reject()] as const;
  it('answers file-rejected 422 to every client action', () => {
    given(...rejected)
      .when(remove())
      .thenFails('file-rejected', 422);
    given(...rejected)
      .when(restore(at(1)))
      .thenFails('file-rejected', 422);
    given(...rejected)
      .when(purge())
      .thenFails('file-rejected', 422);
  });
  it('is never released by a late clean verdict', () =>
    given(...rejected)
      .when(release())
      .then((events) => expect(events).toEqual([])));
});

describe('an available file', () => {
  const available = [stage(), release()] as const;
  it('goes to the trash on delete, still carrying its size (still billed)', () =>
    given(...available)
      .when(remove())
      .then((events, after) => {
        expect(events[0]).toMatchObject({
          type: 'files.file.deleted',
          data: { sizeBytes: 1000, deletedAt: at(1), purgeAfter: at(31) },
        });
        expect(after.status).toBe('deleted');
      }));
  it('refuses a restore with file-not-deleted 400', () =>
    given(...available)
      .when(restore(at(1)))
      .thenFails('file-not-deleted', 400));
  it('is deleted for good on request, with its size', () =>
    given(...available)
      .when(purge())
      .then((events, after) => {
        expect(events[0]).toMatchObject({
          type: 'files.file.permanent_deleted',
          data: { sizeBytes: 1000, reason: 'requested', previousStatus: 'available' },
        });
        expect(after.status).toBe('purged');
      }));
  it('keeps one thumbnail per preset of its current content', () =>
    given(...available, thumbnail('icon_32'))
      .when(thumbnail('icon_32'))
      .then((events) => expect(events).toEqual([])));
  it('records no thumbnail of an earlier content', () =>
    given(...available)
      .when(thumbnail('card_300', 0))
      .then((events) => expect(events).toEqual([])));
  it('is not released again by a second clean verdict', () =>
    given(...available)
      .when(release())
      .then((events) => expect(events).toEqual([])));
});

describe('a file in the trash since day 1', () => {
  const trashed = [stage(), release(), remove(at(1))] as const;
  it('is restored on day 31, the last day of the window', () =>
    given(...trashed)
      .when(restore(at(31)))
      .then((events, after) => {
        expect(types(events)).toEqual(['files.file.restored']);
        expect(after).toMatchObject({ status: 'available', deletedAt: null });
      }));
  it('refuses a restore on day 31 and a second with file-restore-expired 410', () =>
    given(...trashed)
      .when(restore(new Date(Date.parse(at(31)) + 1000).toISOString()))
      .thenFails('file-restore-expired', 410));
  it('is deleted for good from the trash', () =>
    given(...trashed)
      .when(purge('trash-expired'))
      .then((events) =>
        expect(events[0]).toMatchObject({ data: { previousStatus: 'deleted', reason: 'trash-expired' } }),
      ));
  it('answers a second delete with nothing new', () =>
    given(...trashed)
      .when(remove(at(2)))
      .then((events) => expect(events).toEqual([])));
});

describe('a file deleted for good', () => {
  const purged = [stage(), release(), purge()] as const;
  it('is gone for clients and is not deleted twice', () => {
    given(...purged)
      .when(remove())
      .thenFails('file-not-found', 404);
    given(...purged)
      .when(purge())
      .then((events) => expect(events).toEqual([]));
  });
});

describe('an available image being processed', () => {
  const processing = [stage(), release(), thumbnail('icon_32'), startJob()] as const;
  it('gets its next content version, without the thumbnails of the previous one', () =>
    given(...processing)
      .when(completeJob())
      .then((events, after) => {
        expect(events[0]).toMatchObject({
          type: 'files.file.processed',
          data: { previousSizeBytes: 1000, sizeBytes: 700, contentVersion: 2 },
        });
        expect(after).toMatchObject({ contentVersion: 2, sizeBytes: 700, thumbnails: {} });
        expect(after.status !== 'none' && after.jobs['j-1']?.status).toBe('completed');
      }));
  it('keeps its content when the job fails (a timeout)', () =>
    given(...processing)
      .when(failJob())
      .then((events, after) => {
        expect(types(events)).toEqual(['files.file.processing_failed']);
        expect(after).toMatchObject({ contentVersion: 1, sizeBytes: 1000 });
        expect(after.status !== 'none' && after.jobs['j-1']).toMatchObject({ status: 'failed', error: 'timeout' });
      }));
  it('fails the job when the file went to the trash meanwhile', () =>
    given(...processing, remove())
      .when(completeJob())
      .then((events) => expect(types(events)).toEqual(['files.file.processing_failed'])));
  it('ends a job once', () =>
    given(...processing, completeJob())
      .when(completeJob())
      .then((events) => expect(events).toEqual([])));
});
