import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseCommandLine } from '../../../app/cli/commands';
import { asyncProjectionsOfWorkers, roleConfigProblems } from '../../../app/role-config';
import { loadServices } from '../../../app/services';
import { ConfigSchema, loadConfig } from '../../../infra/config';
import type { RegisteredProjection } from '../../../infra/projections/projection';
import { requireEnv, testTool } from '../../support/env';

/**
 * deploy/helm/platform, rendered by the real `helm template` and validated by kubeconform against
 * strict schemas of the Kubernetes API (made by scripts/test-infra.sh from the API document of the
 * k8s.io/kubernetes module: unknown fields are refused), with the chart's defaults, with the
 * production-like values file the README points to, and with credentials given as values. The
 * rendered objects are then held to what the platform needs of them: the same checks a role runs at
 * start, probes where each role serves them, one budget per Deployment, the migration before rollout.
 */
const file = (name: string) => fileURLToPath(new URL(`../../../${name}`, import.meta.url));
const CHART = file('deploy/helm/platform');
const PRODUCTION = file('deploy/helm/values-production.example.yaml');

interface Meta {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  args?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodTemplate {
  metadata: Meta;
  spec: { containers: Container[]; volumes?: { name: string; secret?: { secretName: string } }[] };
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Meta;
}
interface Workload extends K8sObject {
  spec: { replicas?: number; selector?: { matchLabels: Record<string, string> }; template: PodTemplate };
}
interface Budget extends K8sObject {
  spec: { selector: { matchLabels: Record<string, string> }; minAvailable?: number; maxUnavailable?: number };
}
interface Autoscaler extends K8sObject {
  spec: {
    scaleTargetRef: { apiVersion: string; kind: string; name: string };
    minReplicas: number;
    maxReplicas: number;
  };
}
interface Service extends K8sObject {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] };
}
interface Secret extends K8sObject {
  stringData?: Record<string, string>;
}

interface Render {
  text: string;
  objects: K8sObject[];
}

let helm: string;
let kubeconform: string;
let schemaLocation: string;
let kubeVersion: string;
let work: string;
let projections: RegisteredProjection[];
const renders: Record<'defaults' | 'production' | 'inlineSecrets', Render> = {} as never;

/** credentials given as values (secrets.existingSecret empty), each one recognisable in any output */
const mark = () => `Zz${randomBytes(12).toString('hex')}`;
const inlineSecrets: Record<string, string> = {
  PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
  DATABASE_URL: `postgres://platform:${mark()}@postgres.db:5432/platform`,
  CLICKHOUSE_URL: `http://platform:${mark()}@clickhouse.db:8123/platform`,
  REDIS_URL: `redis://:${mark()}@valkey.db:6379`,
  SMTP_URL: `smtp://mailer:${mark()}@smtp.example.com:587`,
  S3_ACCESS_KEY: mark(),
  S3_SECRET_KEY: mark(),
  OIDC_PROVIDERS: JSON.stringify([
    { id: 'corp', issuer: 'https://id.example.com', clientId: 'platform', clientSecret: mark() },
  ]),
  STRIPE_WEBHOOK_SECRET: mark(),
  PADDLE_WEBHOOK_SECRET: mark(),
  METRICS_TOKEN: mark(),
};

const helmTemplate = (...args: string[]) =>
  spawnSync(helm, ['template', 'platform', CHART, '--namespace', 'prod', '--kube-version', kubeVersion, ...args], {
    encoding: 'utf8',
  });

const render = (...args: string[]): Render => {
  const out = helmTemplate(...args);
  if (out.status !== 0) throw new Error(`helm template ${args.join(' ')} failed: ${out.stderr}`);
  const objects = parseAllDocuments(out.stdout)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  return { text: out.stdout, objects };
};

const valuesFile = (name: string, values: unknown): string => {
  const path = join(work, name);
  writeFileSync(path, JSON.stringify(values)); // JSON is YAML
  return path;
};

interface Validation {
  status: number | null;
  summary: { valid: number; invalid: number; errors: number; skipped: number };
  messages: string[];
}
const validate = (manifests: string): Validation => {
  const path = join(work, `manifests-${randomBytes(4).toString('hex')}.yaml`);
  writeFileSync(path, manifests);
  const out = spawnSync(
    kubeconform,
    ['-strict', '-summary', '-output', 'json', '-schema-location', schemaLocation, path],
    { encoding: 'utf8' },
  );
  const report = JSON.parse(out.stdout) as {
    resources?: { msg: string }[];
    summary: Validation['summary'];
  };
  return { status: out.status, summary: report.summary, messages: (report.resources ?? []).map((r) => r.msg) };
};

const ofKind = <T extends K8sObject>(r: Render, kind: string) => r.objects.filter((o) => o.kind === kind) as T[];
const deployments = (r: Render) => ofKind<Workload>(r, 'Deployment');
const containerOf = (w: Workload) => w.spec.template.spec.containers[0]!;
const envOf = (w: Workload) => containerOf(w).env ?? [];
const named = <T extends K8sObject>(list: T[], name: string) => {
  const found = list.find((o) => o.metadata.name === name);
  if (!found) throw new Error(`no object named ${name} (have ${list.map((o) => o.metadata.name).join(', ')})`);
  return found;
};
const selects = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** a container's environment as its process sees it: plain values, and the Secret's keys resolved */
const processEnv = (w: Workload, secret: Record<string, string>): Record<string, string> =>
  Object.fromEntries(
    envOf(w).flatMap((e) => {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref) return [[e.name, e.value ?? '']];
      return ref.key in secret ? [[e.name, secret[ref.key]!]] : [];
    }),
  );

beforeAll(async () => {
  helm = testTool('helm');
  kubeconform = testTool('kubeconform');
  const schemas = requireEnv('TEST_K8S_SCHEMAS');
  if (!existsSync(join(schemas, 'deployment-apps-v1.json')))
    throw new Error(`${schemas} holds no Kubernetes schemas: scripts/test-infra.sh makes them; run it`);
  kubeVersion = /^v(\d+\.\d+\.\d+)-standalone-strict$/.exec(basename(schemas))?.[1] ?? '';
  if (!kubeVersion) throw new Error(`${schemas}: expected a folder named v<version>-standalone-strict`);
  schemaLocation = `${schemas}/{{ .ResourceKind }}{{ .KindSuffix }}.json`;
  work = mkdtempSync(join(tmpdir(), 'helm-chart-'));
  projections = (await loadServices()).projections;
  renders.defaults = render();
  renders.production = render('-f', PRODUCTION);
  renders.inlineSecrets = render(
    '-f',
    PRODUCTION,
    '-f',
    valuesFile('inline.json', { secrets: { existingSecret: '', values: inlineSecrets } }),
  );
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const ROLES = ['gateway', 'write-api', 'read-api', 'workers'];
const AUTOSCALED = ['gateway', 'write-api', 'read-api'];
const cases = ['defaults', 'production', 'inlineSecrets'] as const;

describe.each(cases)('the chart rendered with %s values', (name) => {
  const r = () => renders[name];

  it('is valid Kubernetes, every object checked against the strict schemas of the API', () => {
    const result = validate(r().text);
    expect(result.messages).toEqual([]);
    expect(result.summary).toEqual({ valid: r().objects.length, invalid: 0, errors: 0, skipped: 0 });
    expect(result.status).toBe(0);
  });

  it('runs each role as `platform serve <role>`, with /live and /ready probes on the port it listens on', () => {
    const byRole = new Map(deployments(r()).map((d) => [d.metadata.name, d]));
    for (const role of ROLES) {
      const d = byRole.get(`platform-${role}`);
      expect(d, role).toBeDefined();
      const c = containerOf(d!);
      expect(parseCommandLine(c.args ?? [])).toEqual({ command: 'serve', role });
      const port = c.ports?.find((p) => p.name === 'http')?.containerPort;
      expect(String(port)).toBe(envOf(d!).find((e) => e.name === 'PORT')?.value);
      expect(c.livenessProbe?.httpGet).toEqual({ path: '/live', port: 'http' });
      expect(c.readinessProbe?.httpGet).toEqual({ path: '/ready', port: 'http' });
      expect(c.startupProbe?.httpGet).toEqual({ path: '/live', port: 'http' });
      expect(c.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      expect(c.resources?.limits).toMatchObject({ memory: expect.any(String) });
    }
  });

  it('scales gateway, write-api and read-api with an autoscaler on a Deployment that leaves replicas to it', () => {
    const hpas = ofKind<Autoscaler>(r(), 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.metadata.name).sort()).toEqual(AUTOSCALED.map((role) => `platform-${role}`).sort());
    for (const h of hpas) {
      expect(h.spec.scaleTargetRef).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment' });
      const target = named(deployments(r()), h.spec.scaleTargetRef.name);
      expect(target.spec.replicas).toBeUndefined();
      expect(containerOf(target).resources?.requests?.cpu).toBeDefined(); // utilisation is measured against it
      expect(h.spec.minReplicas).toBeLessThanOrEqual(h.spec.maxReplicas);
    }
  });

  it('gives every Deployment one disruption budget that selects exactly its pods', () => {
    const pdbs = ofKind<Budget>(r(), 'PodDisruptionBudget');
    const ds = deployments(r());
    expect(pdbs).toHaveLength(ds.length);
    for (const d of ds) {
      const matching = pdbs.filter((p) => selects(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
      expect(matching.map((p) => p.metadata.name)).toEqual([d.metadata.name]);
      expect(matching[0]!.spec.selector.matchLabels).toEqual(d.spec.selector?.matchLabels);
    }
  });

  it('migrates the database in a Job hooked before install and upgrade', () => {
    const [job, ...others] = ofKind<Workload>(r(), 'Job');
    expect(others).toEqual([]);
    expect(job!.metadata.annotations?.['helm.sh/hook']?.split(',').sort()).toEqual(['pre-install', 'pre-upgrade']);
    expect(parseCommandLine(containerOf(job!).args ?? [])).toEqual({ command: 'migrate' });
    const db = (w: Workload) => envOf(w).find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef;
    for (const d of deployments(r())) expect(db(d)).toEqual(db(job!));
  });

  it('sets only variables the platform reads (infra/config.ts), credentials only from the Secret', () => {
    const known = new Set(Object.keys(ConfigSchema.shape));
    const secretKeys = new Set(Object.keys(inlineSecrets));
    const workloads = [...deployments(r()), ...ofKind<Workload>(r(), 'Job')];
    for (const w of workloads) {
      const names = envOf(w).map((e) => e.name);
      expect(names.filter((n) => !known.has(n))).toEqual([]);
      expect(new Set(names).size).toBe(names.length);
      for (const e of envOf(w)) {
        if (secretKeys.has(e.name)) expect(e.valueFrom?.secretKeyRef?.key, e.name).toBe(e.name);
        for (const secret of Object.values(inlineSecrets)) expect(e.value ?? '').not.toContain(secret);
      }
      // the gRPC key is a file of the mounted Secret, never its text
      const key = envOf(w).find((e) => e.name === 'GRPC_TLS_KEY')?.value;
      if (key) {
        const mount = containerOf(w).volumeMounts?.find((m) => key.startsWith(`${m.mountPath}/`));
        const volume = w.spec.template.spec.volumes?.find((v) => v.name === mount?.name);
        expect(volume?.secret?.secretName).toBe('platform-grpc-tls');
      }
    }
  });
});

describe('the chart with credentials given as values', () => {
  it('keeps them in a Secret made before the migrate Job, and out of every other object', () => {
    const [secret, ...others] = ofKind<Secret>(renders.inlineSecrets, 'Secret');
    expect(others).toEqual([]);
    expect(secret!.stringData).toEqual(inlineSecrets);
    expect(Number(secret!.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(0);
    expect(secret!.metadata.annotations?.['helm.sh/hook']).toContain('pre-install');
    const elsewhere = renders.inlineSecrets.objects.filter((o) => o.kind !== 'Secret').map((o) => JSON.stringify(o));
    for (const value of Object.values(inlineSecrets)) expect(elsewhere.join('\n')).not.toContain(value);
  });

  it("gives every process a configuration its own start-up check accepts (the role's and migrate's)", () => {
    const secret = ofKind<Secret>(renders.inlineSecrets, 'Secret')[0]!.stringData!;
    const problems = [...deployments(renders.inlineSecrets), ...ofKind<Workload>(renders.inlineSecrets, 'Job')].flatMap(
      (w) => {
        const invocation = parseCommandLine(containerOf(w).args ?? []);
        try {
          const config = loadConfig(processEnv(w, secret));
          if (invocation.command !== 'serve') return [];
          const { role, projection } = invocation;
          return roleConfigProblems({ role, projection, projections, config }).map((p) => `${w.metadata.name}: ${p}`);
        } catch (error) {
          return [`${w.metadata.name}: ${(error as Error).message}`];
        }
      },
    );
    expect(problems).toEqual([]);
  });

  it('refuses to render without a required credential', () => {
    const partial = { ...inlineSecrets, DATABASE_URL: '' };
    const out = helmTemplate('-f', valuesFile('partial.json', { secrets: { existingSecret: '', values: partial } }));
    expect(out.status).not.toBe(0);
    expect(out.stderr).toMatch(/secrets\.values\.DATABASE_URL is required/);
  });
});

describe('the chart with the production-like values', () => {
  const r = () => renders.production;

  it('runs each listed async projection in a Deployment of its own, as `platform serve projector <name>`', () => {
    const projector = named(deployments(r()), 'platform-projector-audit-domain');
    expect(parseCommandLine(containerOf(projector).args ?? [])).toEqual({
      command: 'serve',
      role: 'projector',
      projection: 'audit.domain',
    });
    expect(projections.find((p) => p.name === 'audit.domain')?.mode).toBe('async');
    // which the workers leave to it, so it scales and falls behind on its own
    const value = envOf(named(deployments(r()), 'platform-workers')).find((e) => e.name === 'DEDICATED_PROJECTIONS');
    const { DEDICATED_PROJECTIONS: dedicated = [] } = loadConfig({ DEDICATED_PROJECTIONS: value?.value ?? '' });
    expect(dedicated).toEqual(['audit.domain']);
    expect(asyncProjectionsOfWorkers(projections, dedicated)).not.toContain('audit.domain');
  });

  it("points the gateway at write-api's and read-api's Services, and billing's gRPC at write-api's port", () => {
    const services = ofKind<Service>(r(), 'Service');
    const ds = deployments(r());
    const env = (name: string) => Object.fromEntries(envOf(named(ds, name)).map((e) => [e.name, e.value]));
    const gateway = env('platform-gateway');
    const serviceAt = (host: string, port: string) => {
      const s = named(services, host);
      const p = s.spec.ports.find((x) => String(x.port) === port);
      const backend = ds.find((d) => selects(s.spec.selector, d.spec.template.metadata.labels));
      return {
        backend: backend?.metadata.name,
        port: containerOf(backend!).ports?.find((x) => x.name === p?.targetPort),
      };
    };
    for (const [variable, role] of [
      ['WRITE_API_URL', 'write-api'],
      ['READ_API_URL', 'read-api'],
    ] as const) {
      const url = new URL(gateway[variable]!);
      expect(serviceAt(url.hostname, url.port).backend).toBe(`platform-${role}`);
    }
    const [host, port] = gateway.BILLING_GRPC_TARGET!.split(':');
    const grpc = serviceAt(host!, port!);
    expect(grpc.backend).toBe('platform-write-api');
    expect(String(grpc.port?.containerPort)).toBe(env('platform-write-api').GRPC_PORT);
    expect(env('platform-write-api').GRPC_HOST).toBe('0.0.0.0');
  });
});

describe("the chart's values", () => {
  it('are checked by the schema beside them: a misspelt key or a malformed address stops the render', () => {
    const misspelt = helmTemplate('--set', 'roles.gatewy.replicas=3');
    expect(misspelt.status).not.toBe(0);
    expect(misspelt.stderr).toMatch(/additional properties 'gatewy' not allowed/);
    const brokers = helmTemplate('--set', 'kafka.brokers=kafka');
    expect(brokers.status).not.toBe(0);
    expect(brokers.stderr).toMatch(/kafka\/brokers/);
  });

  it('refuse a credential among the plain settings', () => {
    const out = helmTemplate('--set', 'env.DATABASE_URL=postgres://platform:secret@db:5432/platform');
    expect(out.status).not.toBe(0);
    expect(out.stderr).toMatch(/env\.DATABASE_URL is a credential/);
  });
});

describe('kubeconform on a broken object', () => {
  it('refuses a field the Kubernetes API does not have, and a value of the wrong type', () => {
    const gateway = structuredClone(named(deployments(renders.defaults), 'platform-gateway'));
    (containerOf(gateway) as Record<string, unknown>).readinesProbe = { httpGet: { path: '/ready', port: 'http' } }; // misspelt
    const misspelt = validate(JSON.stringify(gateway));
    expect(misspelt.status).not.toBe(0);
    expect(misspelt.summary.invalid).toBe(1);
    expect(misspelt.messages.join('\n')).toMatch(/readinesProbe/);

    const wrongType = structuredClone(named(deployments(renders.defaults), 'platform-workers'));
    (wrongType.spec as Record<string, unknown>).replicas = 'two';
    expect(validate(JSON.stringify(wrongType)).summary.invalid).toBe(1);
  });
});
