import type { Clock } from '../runtime/clock';
import type { ObjectStore } from './port';
import { createLocalObjectStore } from './local';
import { createS3ObjectStore } from './s3';

export type { ObjectHead, ObjectStore } from './port';
export { InvalidObjectKeyError, ObjectNotFoundError } from './port';

export interface ObjectStoreConfig {
  dataDir: string;
  publicBaseUrl: string;
  /** secret for the local store's presigned URLs */
  signingSecret: string;
  s3?: { endpoint: string; region?: string; accessKeyId: string; secretAccessKey: string; bucket: string };
  /** the platform's clock: presigned URLs and forms expire by it */
  clock?: Clock;
}

/** S3 when S3_ENDPOINT and friends are configured, <dataDir>/objects otherwise. */
export const createObjectStore = (config: ObjectStoreConfig): ObjectStore =>
  config.s3
    ? createS3ObjectStore({ ...config.s3, clock: config.clock })
    : createLocalObjectStore({
        dataDir: config.dataDir,
        publicBaseUrl: config.publicBaseUrl,
        signingSecret: config.signingSecret,
        clock: config.clock,
      });
