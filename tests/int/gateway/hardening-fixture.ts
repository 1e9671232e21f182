import { defineRoutes, mergeServiceParts } from '../../../infra/services';

/** a route that fails unexpectedly: the 5xx of the hardening suite's header checks */
const boom = defineRoutes({
  namespace: 'gateway',
  register(app) {
    app.get('/test/boom', { config: { access: 'public' } }, async () => {
      throw new Error('boom');
    });
  },
});

export const hardeningFixture = mergeServiceParts({ read: [boom] });
