import { DomainError } from '../../domain/shared/errors';

/** The stream moved on since the caller read it. Handlers retry on it when the client did not pin a version. */
export class StreamVersionConflict extends DomainError {
  constructor(
    readonly streamId: string,
    readonly expected: number | 'none',
    readonly actual: number | null,
  ) {
    super({
      status: 409,
      suffix: 'conflict',
      title: 'Conflict',
      detail: `The resource was changed concurrently (expected version ${expected}, found ${actual ?? 'none'}).`,
    });
    this.name = 'StreamVersionConflict';
  }
}
