import { dataEraser } from '../../commands/data/erasure';
import { defineWorkers } from '../../infra/services';
import { erasureWorker } from '../erasure';

/** the data layer's one worker: a terminated tenant's module rows erased in the phase billing drives */
export default defineWorkers({ workers: (kernel) => [erasureWorker(kernel, dataEraser)] });
