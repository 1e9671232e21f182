import type { FastifyReply, FastifyRequest } from 'fastify';
import { commonErrors } from '../domain/shared/errors';
import type { GatewayPorts } from '../infra/http/gateway-ports';

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE';
const ALLOW_HEADERS =
  'Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Correlation-ID, traceparent';
const EXPOSE_HEADERS =
  'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed, Deprecation, Sunset, Location, ETag';

const normalize = (origin: string): string => origin.trim().replace(/\/+$/, '').toLowerCase();

export const parseOrigins = (list: string): Set<string> =>
  new Set(
    list
      .split(',')
      .map(normalize)
      .filter((o) => o.length > 0 && o !== '*'),
  );

const forbidden = () => commonErrors.forbidden('Cross-origin requests from this origin are not allowed.');

/**
 * Strict CORS (spec 000 rule 10): no wildcard; an origin is allowed when CORS_ALLOWED_ORIGINS
 * lists it or when the caller's tenant allows it in its settings. With CORS_ALLOWED_ORIGINS
 * empty, every cross-origin request (an Origin header other than the platform's own) is a 403.
 * A preflight carries no token, so it passes for an origin some tenant allows; the request
 * itself is then checked against the caller's tenant.
 */
export class CorsPolicy {
  private readonly configured: Set<string>;
  private readonly ownOrigin: string;

  constructor(
    allowed: string,
    rootUrl: string,
    private readonly ports: () => GatewayPorts,
  ) {
    this.configured = parseOrigins(allowed);
    this.ownOrigin = normalize(new URL(rootUrl).origin);
  }

  /** the request's Origin when it is cross-origin, null otherwise */
  crossOrigin(request: FastifyRequest): string | null {
    const header = request.headers.origin;
    if (typeof header !== 'string' || header === '') return null;
    const origin = normalize(header);
    if (origin === this.ownOrigin) return null;
    const host = request.headers.host;
    if (host && (origin === `http://${host.toLowerCase()}` || origin === `https://${host.toLowerCase()}`)) return null;
    return origin;
  }

  /**
   * Runs before authentication. Answers a preflight itself (true: the reply is sent); refuses
   * with 403 when CORS is off or the origin is nobody's; returns 'tenant' when only the caller's
   * tenant can allow the origin (checked by afterAuth).
   */
  async beforeAuth(
    request: FastifyRequest,
    reply: FastifyReply,
    origin: string,
    beforePreflightAnswer: () => Promise<void>,
  ): Promise<'sent' | 'allowed' | 'tenant'> {
    if (this.configured.size === 0) throw forbidden();
    const listed = this.configured.has(origin);
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
    if (preflight) {
      if (!listed && !(await this.ports().originKnownToAnyTenant(origin))) throw forbidden();
      await beforePreflightAnswer();
      this.allow(reply, origin);
      await reply
        .code(204)
        .headers({
          'Access-Control-Allow-Methods': ALLOW_METHODS,
          'Access-Control-Allow-Headers': ALLOW_HEADERS,
          'Access-Control-Max-Age': '600',
        })
        .send();
      return 'sent';
    }
    if (listed) {
      this.allow(reply, origin);
      return 'allowed';
    }
    return 'tenant';
  }

  /** for an origin only a tenant can allow: the caller's tenant must list it */
  async afterAuth(reply: FastifyReply, origin: string, tenantId: string | null): Promise<void> {
    const origins = tenantId ? await this.ports().tenantCorsOrigins(tenantId) : [];
    if (!origins.some((o) => normalize(o) === origin)) throw forbidden();
    this.allow(reply, origin);
  }

  private allow(reply: FastifyReply, origin: string): void {
    reply
      .header('Access-Control-Allow-Origin', origin)
      .header('Vary', 'Origin')
      .header('Access-Control-Expose-Headers', EXPOSE_HEADERS);
  }
}
