import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Invocation } from '../../../app/cli/commands';
import { parseCommandLine } from '../../../app/cli/commands';
import type { Config } from '../../../infra/config';
import { loadConfig } from '../../../infra/config';
import { loadServices } from '../../../app/services';
import type { RegisteredProjection } from '../../../infra/projections/projection';
import { roleConfigProblems } from '../../../app/role-config';
import type { ComposeFile, ComposeService, Vars } from '../../support/compose';
import {
  commandOf,
  durationMs,
  isPlatformService,
  loadCompose,
  parseDotEnv,
  serviceEnvironment,
} from '../../support/compose';

/**
 * No Docker engine runs here, so docker-compose.yml is checked the way it would start: each
 * platform service's command through the CLI's own parser, its container environment through the
 * configuration check `platform serve <role>` runs before contacting any engine.
 */
const file = (name: string) => fileURLToPath(new URL(`../../../${name}`, import.meta.url));
const example = parseDotEnv(readFileSync(file('.env.example'), 'utf8'));
// what a user's .env holds after following .env.example: the example with a secret filled in
const dotEnv: Vars = { ...example, PLATFORM_SECRET_KEY: randomBytes(32).toString('base64') };

interface Role {
  name: string;
  service: ComposeService;
  invocation: Invocation;
  env: Vars;
}
let compose: ComposeFile;
let roles: Role[];
let projections: RegisteredProjection[];

const platformServices = (c: ComposeFile) => Object.entries(c.services).filter(([, s]) => isPlatformService(s));
const serving = () => roles.filter((r) => r.invocation.command === 'serve');
const configOf = (r: Role): Config => loadConfig(r.env);

beforeAll(async () => {
  compose = loadCompose(file('docker-compose.yml'), dotEnv);
  roles = platformServices(compose).map(([name, service]) => {
    try {
      return {
        name,
        service,
        invocation: parseCommandLine(commandOf(service)),
        env: serviceEnvironment(compose, service, dotEnv),
      };
    } catch (error) {
      throw new Error(`service ${name}: ${(error as Error).message}`, { cause: error });
    }
  });
  projections = (await loadServices()).projections;
});

describe('docker-compose.yml with the .env that .env.example describes', () => {
  it('refuses to start while PLATFORM_SECRET_KEY is unset, saying where to set it', () => {
    expect(example.PLATFORM_SECRET_KEY ?? '').toBe(''); // a secret committed in the example would end up in production
    expect(() => loadCompose(file('docker-compose.yml'), example)).toThrow(
      /PLATFORM_SECRET_KEY is missing a value: .*\.env\.example/,
    );
  });

  it('runs commands the platform CLI knows, through the image entrypoint', () => {
    expect(readFileSync(file('Dockerfile'), 'utf8')).toMatch(
      /^ENTRYPOINT \["node", "--enable-source-maps", "--import", ".\/dist\/instrument.mjs", "dist\/platform.mjs"\]$/m,
    );
    expect(roles.map((r) => r.name)).toEqual(
      expect.arrayContaining(['migrate', 'gateway', 'write-api', 'read-api', 'workers']),
    );
    for (const r of roles)
      expect([r.name, r.invocation.command]).toEqual([r.name, expect.stringMatching(/^(serve|migrate)$/)]);
  });

  it('gives every role a configuration its own start-up check accepts', () => {
    const problems = serving().flatMap((r) => {
      if (r.invocation.command !== 'serve') return [];
      const { role, projection } = r.invocation;
      try {
        return roleConfigProblems({ role, projection, projections, config: configOf(r) }).map((p) => `${r.name}: ${p}`);
      } catch (error) {
        return [`${r.name}: ${(error as Error).message}`];
      }
    });
    expect(problems).toEqual([]);
  });

  it('runs the migrate job on the database the roles use', () => {
    const migrate = roles.find((r) => r.invocation.command === 'migrate')!;
    expect(configOf(migrate).DATABASE_URL).toBeDefined();
    expect(new Set(roles.map((r) => configOf(r).DATABASE_URL)).size).toBe(1);
  });

  it('gives every role the same secret and the same ROOT_URL, so tokens of one role are accepted by the others', () => {
    expect(new Set(serving().map((r) => r.env.PLATFORM_SECRET_KEY))).toEqual(new Set([dotEnv.PLATFORM_SECRET_KEY]));
    expect(new Set(serving().map((r) => configOf(r).ROOT_URL))).toEqual(new Set([example.ROOT_URL]));
  });

  it('gives every serving role the METRICS_TOKEN of .env, and none while .env leaves it empty', () => {
    expect(example.METRICS_TOKEN ?? '').toBe('');
    expect(serving().map((r) => configOf(r).METRICS_TOKEN)).toEqual(serving().map(() => undefined));

    const token = randomBytes(24).toString('hex');
    const withToken = loadCompose(file('docker-compose.yml'), { ...dotEnv, METRICS_TOKEN: token });
    const tokens = platformServices(withToken)
      .filter(([, s]) => parseCommandLine(commandOf(s)).command === 'serve')
      .map(([, s]) => loadConfig(serviceEnvironment(withToken, s, dotEnv)).METRICS_TOKEN);
    expect(tokens.length).toBeGreaterThan(0);
    expect(new Set(tokens)).toEqual(new Set([token]));
  });

  it('points the gateway at the write-api and read-api services, on the ports they listen on', () => {
    const gateway = configOf(
      serving().find((r) => r.invocation.command === 'serve' && r.invocation.role === 'gateway')!,
    );
    const upstream = (url: string | undefined, role: string) => {
      const { hostname, port } = new URL(url ?? 'http://missing');
      const target = roles.find((r) => r.name === hostname);
      expect(target?.invocation, `${url} names a service running serve ${role}`).toMatchObject({
        command: 'serve',
        role,
      });
      expect(Number(port || 80)).toBe(configOf(target!).PORT);
    };
    upstream(gateway.WRITE_API_URL, 'write-api');
    upstream(gateway.READ_API_URL, 'read-api');
  });

  it('names engines by services of the file', () => {
    const services = Object.keys(compose.services);
    for (const r of roles) {
      const c = configOf(r);
      const hosts = [c.DATABASE_URL, c.REDIS_URL, c.CLICKHOUSE_URL, c.S3_ENDPOINT, c.SMTP_URL]
        .filter(Boolean)
        .map((u) => new URL(u!).hostname);
      hosts.push(
        ...(c.KAFKA_BROKERS ?? '')
          .split(',')
          .filter(Boolean)
          .map((b) => b.split(':')[0]!),
        ...(c.CLAMD_HOST ? [c.CLAMD_HOST] : []),
      );
      for (const host of hosts) expect(services, `${r.name} reaches ${host}`).toContain(host);
    }
  });

  it('checks each role on /ready and lets it drain for longer than SHUTDOWN_GRACE_MS before killing it', () => {
    for (const r of serving()) {
      const config = configOf(r);
      const test = [r.service.healthcheck?.test ?? []].flat().join(' ');
      expect(test, `${r.name} health check`).toContain(`127.0.0.1:${config.PORT}/ready`);
      expect(r.service.healthcheck?.disable ?? false).toBe(false);
      expect(durationMs(r.service.stop_grace_period ?? '10s'), `${r.name} stop_grace_period`).toBeGreaterThan(
        config.SHUTDOWN_GRACE_MS,
      );
    }
  });

  it('checks the health of every long-running service, and starts the roles once their engines are healthy', () => {
    const jobs = new Set(
      Object.entries(compose.services)
        .filter(([, s]) => s.restart === 'no')
        .map(([name]) => name),
    );
    for (const [name, service] of Object.entries(compose.services)) {
      if (jobs.has(name)) continue;
      expect(service.healthcheck?.test, `${name} health check`).toBeDefined();
      expect(service.healthcheck?.disable ?? false, `${name} health check`).toBe(false);
    }
    for (const r of serving()) {
      const after = Array.isArray(r.service.depends_on) ? {} : (r.service.depends_on ?? {});
      for (const [engine, { condition }] of Object.entries(after))
        expect(`${engine}: ${condition}`).toBe(
          `${engine}: ${jobs.has(engine) ? 'service_completed_successfully' : 'service_healthy'}`,
        );
    }
  });

  it('starts every role after the migrate job completed', () => {
    const migrate = roles.find((r) => r.invocation.command === 'migrate')!;
    for (const r of serving()) {
      const after = Array.isArray(r.service.depends_on) ? {} : (r.service.depends_on ?? {});
      expect(after[migrate.name]?.condition, `${r.name} depends_on ${migrate.name}`).toBe(
        'service_completed_successfully',
      );
    }
  });
});
