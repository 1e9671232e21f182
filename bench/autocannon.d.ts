/** the part of autocannon's programmatic API the benchmarks use (the package ships no types) */
declare module 'autocannon' {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: Request) => Request;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    requests?: Request[];
  }
  interface Histogram {
    p50: number;
    p90: number;
    p99: number;
    max: number;
    average: number;
  }
  interface Result {
    requests: { total: number; average: number };
    latency: Histogram;
    '2xx': number;
    non2xx: number;
    errors: number;
    statusCodeStats?: Record<string, { count: number }>;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
