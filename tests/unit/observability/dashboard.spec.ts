import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { metricsRegistry, SCRAPE_GAUGES } from '../../../infra/observability/metrics';

/** deploy/grafana/platform-dashboard.json: every query names metrics the code registers */
const dashboard = JSON.parse(
  readFileSync(new URL('../../../deploy/grafana/platform-dashboard.json', import.meta.url), 'utf8'),
) as { panels: { title: string; targets?: { expr: string }[] }[] };

const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

/** the series names of a registered family as a scrape shows them (a histogram's _bucket, _sum, _count) */
const exposed = async (): Promise<Set<string>> => {
  const names = new Set<string>();
  for (const m of await metricsRegistry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
  }
  return names;
};

/** the metric names of a PromQL expression: identifiers followed by a selector `{` or a range `[` */
const metricNames = (expr: string): string[] =>
  [...expr.matchAll(/\b([a-z_][a-z0-9_]*)\s*[{[]/g)].map((m) => m[1]!).filter((n) => !/^(by|without)$/.test(n));

describe('the Grafana dashboard', () => {
  it('has queries', () => {
    expect(exprs.length).toBeGreaterThan(20);
  });

  it('uses only metric names the code registers', async () => {
    const known = await exposed();
    const unknown = exprs.flatMap(({ panel, expr }) =>
      metricNames(expr)
        .filter((n) => !known.has(n))
        .map((n) => `${panel}: ${n}`),
    );
    expect(unknown).toEqual([]);
  });

  it('shows every platform_ family the code registers', async () => {
    const used = new Set(exprs.flatMap(({ expr }) => metricNames(expr)));
    const families = (await metricsRegistry.getMetricsAsJSON())
      .map((m) => m.name)
      .filter((n) => n.startsWith('platform_'));
    const shown = (name: string) => [...used].some((u) => u === name || u.startsWith(`${name}_`));
    expect(families.filter((n) => !shown(n))).toEqual([]);
    expect(families).toEqual(expect.arrayContaining(Object.keys(SCRAPE_GAUGES)));
  });
});
