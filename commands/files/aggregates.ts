import { streamIdOf } from '../../domain/shared/event';
import { FileEvent } from '../../domain/files/events';
import type { File } from '../../domain/files/file';
import { fileDecider } from '../../domain/files/file';
import { defineAggregate } from '../../infra/eventstore/aggregate';

/** the state beside the stream is plain JSON (no bigints) */
export const FileAggregate = defineAggregate({
  name: 'files.file',
  decider: fileDecider,
  stateSchema: 'files.file.v1',
  decode: (json): File => json as File,
  toEvent: (e) => FileEvent.parse(e),
});

export const fileStream = (tenantId: string, fileId: string): string => streamIdOf('files.file', tenantId, fileId);
