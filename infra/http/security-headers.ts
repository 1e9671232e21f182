/**
 * Security headers on every answer (OWASP Secure Headers; the set @fastify/helmet sends, written
 * out here because they must also go on the answers the framework writes to the socket itself —
 * 431, malformed request lines — where no plugin hook runs).
 *
 * The API answers JSON only, so its policy forbids everything a browser could do with a
 * response; the interactive references under /api-docs and the pages mail links open get a
 * policy that lets their own scripts and styles run and nothing else.
 */
const API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** swagger-ui and Redoc: their bundles from this origin, the inline bootstrap, inline styles, data: images, Redoc's blob: worker */
export const DOCS_POLICY =
  "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** the small pages mail links open: their own script and style, calls to this origin */
export const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export const securityHeaders = (rootUrl: string): Record<string, string> => ({
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': API_POLICY,
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Origin-Agent-Cluster': '?1',
  'X-DNS-Prefetch-Control': 'off',
  'X-Permitted-Cross-Domain-Policies': 'none',
  // HSTS only where the public root is https: on plain http it would be ignored, and it must never pin a dev host
  ...(rootUrl.startsWith('https://') ? { 'Strict-Transport-Security': 'max-age=31536000; includeSubDomains' } : {}),
});

/**
 * Answers that carry tokens or secrets, and any other answer of the API, must not be stored by a
 * browser or an intermediary: no-store unless a route chose its own policy (JWKS, docs assets).
 */
export const NO_STORE = 'no-store';
