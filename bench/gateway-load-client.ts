/**
 * Open-loop load generator for bench/gateway-overhead.ts, run as its own process so the server's
 * event loop does not share time with it: sends `rate` requests/s (1 ms ticks, so arrivals are smooth rather than bursts) over keep-alive
 * connections for each phase and prints one JSON line per phase with latency percentiles (µs
 * precision, from send to the last byte of the answer) and status counts.
 * Usage (by the bench): node --import tsx bench/gateway-load-client.ts '<json phases>'
 */
import { Agent, request } from 'node:http';

interface Phase {
  name: string;
  url: string;
  seconds: number;
  rate: number;
  headers: Record<string, string>;
}
const phases = JSON.parse(process.argv[2] ?? '[]') as Phase[];
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const once = (url: URL, headers: Record<string, string>) =>
  new Promise<{ ms: number; status: number }>((resolve) => {
    const t = performance.now();
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ms: performance.now() - t, status: res.statusCode ?? 0 }));
    });
    req.on('error', () => resolve({ ms: performance.now() - t, status: 0 }));
    req.end();
  });

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;

for (const phase of phases) {
  const url = new URL(phase.url);
  const results: Promise<{ ms: number; status: number }>[] = [];
  const perTick = phase.rate / 1000;
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      if (elapsed >= phase.seconds * 1000) {
        clearInterval(timer);
        done();
        return;
      }
      const due = Math.floor((elapsed / 1000) * phase.rate + perTick);
      while (sent < due) {
        results.push(once(url, phase.headers));
        sent += 1;
      }
    }, 1);
  });
  const settled = await Promise.all(results);
  const ms = settled.map((r) => r.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const r of settled) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const seconds = (performance.now() - start) / 1000;
  console.log(
    JSON.stringify({
      name: phase.name,
      n: ms.length,
      rps: Math.round(ms.length / seconds),
      p50: pct(ms, 50),
      p90: pct(ms, 90),
      p99: pct(ms, 99),
      max: ms[ms.length - 1],
      statuses,
    }),
  );
}
agent.destroy();
