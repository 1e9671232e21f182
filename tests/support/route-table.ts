import type { FastifyInstance } from 'fastify';

export interface TableRoute {
  method: string;
  /** the path as registered, parameters as `:name` */
  url: string;
}

/**
 * Every route of a Fastify application, read from its router (`printRoutes`), not from a list
 * kept by hand: each line of the tree is a path segment under its parent's, followed by the
 * methods registered there, e.g.
 *
 *   ├── /v1/wallets (POST, GET, HEAD)
 *   │   └── /:id (GET, HEAD)
 *   │       └── /credit (POST)
 */
export const routeTable = (app: FastifyInstance): TableRoute[] => {
  const routes: TableRoute[] = [];
  const prefixes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const at = line.search(/[├└]── /);
    if (at < 0) continue;
    const depth = at / 4;
    const match = /^(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line.slice(at + 4).trim());
    if (!match) throw new Error(`a line of the route table this reader does not know: ${line}`);
    const url = `${depth > 0 ? prefixes[depth - 1] : ''}${match[1]}`;
    prefixes[depth] = url;
    prefixes.length = depth + 1;
    for (const method of match[2]?.split(', ') ?? []) routes.push({ method, url });
  }
  return routes;
};

/** the methods whose requests carry a body */
export const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
