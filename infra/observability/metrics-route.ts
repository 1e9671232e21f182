import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { commonErrors } from '../../domain/shared/errors';
import type { Kernel } from '../kernel';
import { observeHttpRequest } from './metrics';
import { METRICS_CONTENT_TYPE, scrapeMetrics } from './metrics-cluster';

/**
 * GET /metrics: the process's (or its cluster's) metrics in Prometheus's text format, on the role's
 * own port, for a scraper holding METRICS_TOKEN as a bearer token (docs/decisions.md "Metrics:
 * protection"). Without the token configured the route refuses everyone (403); without the right
 * token it answers 401 with WWW-Authenticate — problems, like every refusal. It is neither rate
 * limited nor audited (a scrape every 15 s would fill the API-call audit; gateway/edge.ts UNLIMITED).
 */
export const METRICS_PATH = '/metrics';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** compares in constant time (the digests have one length whatever was sent) */
const tokenMatches = (expected: Buffer, header: string | undefined): boolean => {
  const match = header ? /^Bearer +(\S+)\s*$/i.exec(header) : null;
  return match !== null && timingSafeEqual(expected, digest(match[1]!));
};

export const registerMetricsRoute = (app: FastifyInstance, kernel: Kernel): void => {
  const token = kernel.config.METRICS_TOKEN;
  const expected = token ? digest(token) : null;
  app.get(
    METRICS_PATH,
    {
      config: {
        access: 'public',
        namespace: 'gateway',
        problems: [401, 403],
        openapi: {
          responses: {
            200: {
              description: 'the metrics in the Prometheus text exposition format 0.0.4',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
      schema: {
        tags: ['gateway'],
        summary: 'Prometheus metrics of this process (or its HTTP cluster): Authorization: Bearer <METRICS_TOKEN>',
        security: [{ bearer: [] }],
      },
    },
    async (request, reply) => {
      if (!expected) throw commonErrors.forbidden('Metrics are off on this process: set METRICS_TOKEN to scrape them.');
      if (!tokenMatches(expected, request.headers.authorization)) {
        reply.header('www-authenticate', 'Bearer realm="metrics"');
        throw commonErrors.unauthorized('A valid metrics token is required: Authorization: Bearer <METRICS_TOKEN>.');
      }
      const text = await scrapeMetrics();
      return reply.type(METRICS_CONTENT_TYPE).send(text);
    },
  );
};

/** counts every answer of the host in platform_http_request_duration_seconds (route templates only) */
export const measureHttp = (app: FastifyInstance): void => {
  app.addHook('onResponse', (request, reply, done) => {
    observeHttpRequest(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime);
    done();
  });
};
