/**
 * Health of the configured components, reported by GET /health with the names of spec 000
 * (postgresql, clickhouse, kafka, valkey, s3, ...). Only configured components are listed.
 */
export type ComponentState = 'healthy' | 'degraded' | 'unhealthy';

export interface ComponentStatus {
  status: ComponentState;
  latencyMs: number | null;
  error: string | null;
}

export interface HealthReport {
  status: ComponentState;
  version: string;
  uptime: string;
  components: Record<string, ComponentStatus>;
}

type Check = () => Promise<void>;

/** a component answering slower than degradedAfterMs is degraded; one not answering within timeoutMs is unhealthy */
export interface HealthThresholds {
  degradedAfterMs: number;
  timeoutMs: number;
}

const DEFAULT_THRESHOLDS: HealthThresholds = { degradedAfterMs: 1000, timeoutMs: 3000 };

export class HealthRegistry {
  private readonly checks = new Map<string, Check>();
  private readonly startedAt = Date.now();

  constructor(
    private readonly version: string,
    private readonly thresholds: HealthThresholds = DEFAULT_THRESHOLDS,
  ) {}

  register(name: string, check: Check): void {
    this.checks.set(name, check);
  }

  async report(): Promise<HealthReport> {
    const entries = await Promise.all(
      [...this.checks].map(async ([name, check]) => [name, await probe(check, this.thresholds)] as const),
    );
    const components = Object.fromEntries(entries);
    const states = entries.map(([, s]) => s.status);
    const status: ComponentState = states.includes('unhealthy')
      ? 'unhealthy'
      : states.includes('degraded')
        ? 'degraded'
        : 'healthy';
    return { status, version: this.version, uptime: formatDuration(Date.now() - this.startedAt), components };
  }
}

const probe = async (check: Check, { degradedAfterMs, timeoutMs }: HealthThresholds): Promise<ComponentStatus> => {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    const latencyMs = Math.round(performance.now() - start);
    return latencyMs > degradedAfterMs
      ? { status: 'degraded', latencyMs, error: `slow: ${latencyMs} ms` }
      : { status: 'healthy', latencyMs, error: null };
  } catch (error) {
    return { status: 'unhealthy', latencyMs: null, error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
};

export const formatDuration = (ms: number): string => {
  const s = Math.floor(ms / 1000);
  const parts = [
    [Math.floor(s / 86400), 'd'],
    [Math.floor(s / 3600) % 24, 'h'],
    [Math.floor(s / 60) % 60, 'm'],
    [s % 60, 's'],
  ] as const;
  const text = parts
    .filter(([n]) => n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join(' ');
  return text || '0s';
};
