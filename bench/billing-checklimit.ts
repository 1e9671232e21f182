/**
 * CheckLimit over gRPC at a fixed rate (spec 001: under a millisecond; issue 25 aim: p99 < 1 ms at
 * 5,000 calls/s, the client in its own process). This process runs the platform (role all, billing
 * only) and serves; a child process of this same script (CHECKLIMIT_CLIENT=1) is the client:
 * @grpc/grpc-js with the repo's .proto files (tests/support/billing.ts), open loop — calls are
 * started on a 1 ms tick schedule whatever the answers do, so a slow answer shows as latency
 * instead of lowering the rate. The client first asks every tenant × resource once (the server's
 * memory warm), runs a discarded warm-up second at the rate (JIT, connection), then measures.
 * Latency: from the call to its answer in the client. Profile the server: node --cpu-prof --import tsx bench/billing-checklimit.ts …
 * Usage: source .test-infra/env; npx tsx bench/billing-checklimit.ts [calls/s=5000] [seconds=10] [tenants=100]
 */
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { billingContext } from '../commands/billing/context';
import type { Kernel } from '../infra/kernel';
import { billingGrpcClient } from '../tests/support/billing';
import { billingGrpcPort } from '../write-api/billing/serving';
import { billingPlatform, loadAverage, tenantsWithTrials } from './billing-support';
import { machine, progress, report, smokeOr } from './support';

const RESOURCES = [
  'RESOURCE_TYPE_USERS',
  'RESOURCE_TYPE_RECORDS',
  'RESOURCE_TYPE_STORAGE_BYTES',
  'RESOURCE_TYPE_MODULES',
];

interface ClientJob {
  target: string;
  tenants: string[];
  rate: number;
  seconds: number;
  warmSeconds: number;
}

interface ClientResult {
  n: number;
  failed: number;
  seconds: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  firstError?: string;
}

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;

/** the client's side: warm, then `rate` calls/s for `seconds`; prints one JSON line */
const runClient = async (job: ClientJob): Promise<void> => {
  const client = billingGrpcClient(job.target);
  const call = (i: number) =>
    client.call('CheckLimit', {
      tenant_id: job.tenants[i % job.tenants.length],
      resource: RESOURCES[Math.floor(i / job.tenants.length) % RESOURCES.length],
    });
  for (let i = 0; i < job.tenants.length * RESOURCES.length; i += 1) await call(i);
  const phase = async (seconds: number): Promise<ClientResult> => {
    const latencies: number[] = [];
    const pending: Promise<void>[] = [];
    let failed = 0;
    let firstError: string | undefined;
    let sent = 0;
    const start = performance.now();
    await new Promise<void>((done) => {
      const timer = setInterval(() => {
        const elapsed = performance.now() - start;
        if (elapsed >= seconds * 1000) {
          clearInterval(timer);
          done();
          return;
        }
        const due = Math.floor((elapsed / 1000) * job.rate) + 1;
        while (sent < due) {
          const t = performance.now();
          pending.push(
            call(sent).then(
              () => {
                latencies.push(performance.now() - t);
              },
              (error: unknown) => {
                failed += 1;
                firstError ??= String(error);
              },
            ),
          );
          sent += 1;
        }
      }, 1);
    });
    await Promise.all(pending);
    const s = latencies.sort((a, b) => a - b);
    return {
      n: s.length,
      failed,
      seconds: (performance.now() - start) / 1000,
      p50: pct(s, 50),
      p99: pct(s, 99),
      p999: pct(s, 99.9),
      max: s.at(-1) ?? NaN,
      firstError,
    };
  };
  await phase(job.warmSeconds);
  process.stdout.write('MEASURING\n');
  const measured = await phase(job.seconds);
  process.stdout.write(`${JSON.stringify(measured)}\n`);
  client.close();
};

/** what the serving process spent while the client measured: CPU per call, its event loop's delays */
interface ServerSide {
  cpuUs: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

/**
 * how many of the book's lookups waited for a load (a promise) rather than answering from memory:
 * the calls that pay the read models' round trips (bench-only instrumentation of a private method)
 */
const countWaits = (kernel: Kernel) => {
  const book = billingContext(kernel).book as unknown as { entry: (tenantId: string) => unknown };
  const entry = book.entry.bind(book);
  let waited = 0;
  book.entry = (tenantId: string) => {
    const found = entry(tenantId);
    if (found instanceof Promise) waited += 1;
    return found;
  };
  return { reset: () => (waited = 0), count: () => waited };
};

/** the client as a child process of this script; resolves with its figures and the server's side of the measured phase */
const clientProcess = (job: ClientJob, onMeasuring: () => void): Promise<ClientResult & ServerSide> =>
  new Promise((resolve, reject) => {
    const loop = monitorEventLoopDelay({ resolution: 1 });
    let cpu = process.cpuUsage();
    let measuring = false;
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
      env: { ...process.env, CHECKLIMIT_CLIENT: JSON.stringify(job) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (!measuring && out.includes('MEASURING')) {
        measuring = true;
        onMeasuring();
        cpu = process.cpuUsage();
        loop.enable();
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      loop.disable();
      const used = process.cpuUsage(cpu);
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && line.startsWith('{')) {
        const result = JSON.parse(line) as ClientResult;
        resolve({
          ...result,
          cpuUs: (used.user + used.system) / Math.max(1, result.n + result.failed),
          loopDelayP99Ms: loop.percentile(99) / 1e6,
          loopDelayMaxMs: loop.max / 1e6,
        });
      } else reject(new Error(`the CheckLimit client exited ${code}: ${out}`));
    });
  });

if (process.env.CHECKLIMIT_CLIENT) {
  await runClient(JSON.parse(process.env.CHECKLIMIT_CLIENT) as ClientJob);
} else {
  const rate = Number(process.argv[2] ?? 5000);
  const seconds = Number(process.argv[3] ?? 10);
  const tenantCount = Number(process.argv[4] ?? 100);
  const p = await billingPlatform();
  try {
    const tenants = await tenantsWithTrials(p, tenantCount);
    const waits = countWaits(p.kernel);
    const target = `127.0.0.1:${billingGrpcPort(p.kernel)}`;
    progress(
      'checklimit',
      `${rate} calls/s for ${seconds} s over ${tenants.length} tenants, client in its own process (load average ${await loadAverage()})`,
    );
    const s = await clientProcess({ target, tenants, rate, seconds, warmSeconds: smokeOr(2, 0.2) }, waits.reset);
    console.log(machine());
    console.log(
      `CheckLimit over gRPC (plaintext, loopback), open loop at ${rate}/s for ${seconds} s over ${tenants.length} tenants × ${RESOURCES.length} resources, client in its own process`,
    );
    console.log(
      `  achieved ${(s.n / s.seconds).toFixed(0)} calls/s, failed ${s.failed}${s.firstError ? ` (${s.firstError})` : ''}; p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms, p99.9 ${s.p999.toFixed(3)} ms, max ${s.max.toFixed(1)} ms (aim p99 < 1 ms); load average after: ${await loadAverage()}`,
    );
    console.log(
      `  server: ${waits.count()} calls waited for the read models (a load of the tenant's limits); ${s.cpuUs.toFixed(0)} µs of CPU per call; event loop delay p99 ${s.loopDelayP99Ms.toFixed(2)} ms, max ${s.loopDelayMaxMs.toFixed(1)} ms`,
    );
    report({
      path: `CheckLimit over gRPC at ${rate.toLocaleString('en')}/s, p99 (client in its own process)`,
      figure: s.p99,
      unit: 'ms',
      aim: '< 1 ms',
    });
    report({
      path: `CheckLimit over gRPC at ${rate.toLocaleString('en')}/s, p50 (client in its own process)`,
      figure: s.p50,
      unit: 'ms',
      aim: '',
    });
    report({ path: 'CheckLimit over gRPC, achieved', figure: s.n / s.seconds, unit: 'calls/s', aim: '' });
  } finally {
    await p.close();
  }
}
