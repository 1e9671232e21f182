import type { FastifyInstance } from 'fastify';
import type { Kernel } from '../../infra/kernel';

/** provider login, callback, link and unlink (filled in by the providers part) */
export const registerProviderWrites = (_app: FastifyInstance, _kernel: Kernel): void => {};
