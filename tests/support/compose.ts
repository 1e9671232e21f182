import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';

/**
 * docker-compose.yml read the way `docker compose` reads it, without Docker: YAML with merge
 * keys, ${…} interpolation of every value from the project's .env, and each service's container
 * environment (env_file first, environment over it).
 */
export type Vars = Record<string, string>;

export interface ComposeService {
  build?: unknown;
  image?: string;
  command?: string | string[];
  environment?: Record<string, unknown> | string[];
  env_file?: string | (string | { path: string; required?: boolean })[];
  healthcheck?: { test?: string | string[]; disable?: boolean };
  stop_grace_period?: string;
  restart?: string;
  depends_on?: string[] | Record<string, { condition?: string }>;
  secrets?: (string | { source: string; target?: string })[];
}

export interface ComposeFile {
  dir: string;
  services: Record<string, ComposeService>;
  secrets: Record<string, { file?: string }>;
}

/** KEY=value lines; # comments and blank lines skipped, surrounding quotes removed */
export const parseDotEnv = (text: string): Vars => {
  const vars: Vars = {};
  for (const line of text.split('\n')) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (m && !line.trimStart().startsWith('#')) vars[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return vars;
};

const REFERENCE = /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** compose's interpolation: $$, $V, ${V}, ${V:-default}, ${V-default}, ${V:?error}, ${V?error}, ${V:+alt}, ${V+alt} */
export const interpolate = (text: string, vars: Vars): string =>
  text.replace(REFERENCE, (_all, dollar?: string, braced?: string, op?: string, arg = '', bare?: string) => {
    if (dollar) return '$';
    const name = (braced ?? bare)!;
    const value = vars[name];
    const set = value !== undefined;
    const given = set && value !== '';
    switch (op) {
      case ':-':
        return given ? value : arg;
      case '-':
        return set ? value : arg;
      case ':?':
        if (given) return value;
        throw new Error(`required variable ${name} is missing a value: ${arg}`);
      case '?':
        if (set) return value;
        throw new Error(`required variable ${name} is missing a value: ${arg}`);
      case ':+':
        return given ? arg : '';
      case '+':
        return set ? arg : '';
      default:
        return value ?? '';
    }
  });

const interpolateAll = (value: unknown, vars: Vars): unknown => {
  if (typeof value === 'string') return interpolate(value, vars);
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, vars));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, vars)]));
  return value;
};

export const loadCompose = (file: string, vars: Vars): ComposeFile => {
  const doc = interpolateAll(parse(readFileSync(file, 'utf8'), { merge: true }), vars) as {
    services?: Record<string, ComposeService>;
    secrets?: Record<string, { file?: string }>;
  };
  return { dir: dirname(resolve(file)), services: doc.services ?? {}, secrets: doc.secrets ?? {} };
};

const entries = (environment: ComposeService['environment'], vars: Vars): [string, string][] => {
  if (!environment) return [];
  if (Array.isArray(environment)) {
    return environment.map((line) => {
      const at = line.indexOf('=');
      return at < 0 ? [line, vars[line] ?? ''] : [line.slice(0, at), line.slice(at + 1)];
    });
  }
  // a key without a value takes the variable from the shell (here: the .env variables)
  return Object.entries(environment).map(([k, v]) => [
    k,
    v === null || v === undefined ? (vars[k] ?? '') : String(v as string | number | boolean),
  ]);
};

/** the environment the service's container starts with */
export const serviceEnvironment = (compose: ComposeFile, service: ComposeService, vars: Vars): Vars => {
  const env: Vars = {};
  const files =
    service.env_file === undefined ? [] : Array.isArray(service.env_file) ? service.env_file : [service.env_file];
  for (const f of files) {
    const { path, required } = typeof f === 'string' ? { path: f, required: true } : { required: true, ...f };
    let text = '';
    try {
      text = readFileSync(resolve(compose.dir, path), 'utf8');
    } catch (error) {
      if (required) throw new Error(`env file ${path} not found`, { cause: error });
    }
    Object.assign(env, parseDotEnv(text));
  }
  for (const [k, v] of entries(service.environment, vars)) env[k] = v;
  return env;
};

/** the service's secrets: the path a container reads each at (/run/secrets/<name>) → the host file compose mounts there */
export const secretFiles = (compose: ComposeFile, service: ComposeService): Map<string, string> => {
  const files = new Map<string, string>();
  for (const s of service.secrets ?? []) {
    const { source, target = source } = typeof s === 'string' ? { source: s } : s;
    const file = compose.secrets[source]?.file;
    if (!file) throw new Error(`secret ${source} is not a file secret of the compose file`);
    files.set(target.startsWith('/') ? target : `/run/secrets/${target}`, resolve(compose.dir, file));
  }
  return files;
};

/** a service built from this repository's Dockerfile: a platform role or job */
export const isPlatformService = (service: ComposeService): boolean =>
  service.build !== undefined || service.image === 'platform:local';

export const commandOf = (service: ComposeService): string[] =>
  service.command === undefined
    ? []
    : Array.isArray(service.command)
      ? service.command.map(String)
      : service.command.trim().split(/\s+/);

/** compose durations: 1m30s, 15s, 500ms, 2h */
export const durationMs = (text: string): number => {
  const units: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(us|ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a compose duration: ${text}`);
  return parts.reduce((ms, [, n, unit]) => ms + Number(n) * units[unit!]!, 0);
};
