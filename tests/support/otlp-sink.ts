import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testTool } from './env';
import { pollUntil } from './poll';

/**
 * A real OTLP/HTTP trace receiver for the tests: tools/go/otlp-sink, on the OpenTelemetry
 * Collector's own codec (pdata), built by scripts/test-infra.sh into $TEST_TOOLS_BIN. It writes each
 * span it receives as a JSON line; spans() reads them back.
 */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** Server, Client, Internal, Consumer, Producer */
  kind: string;
  service: string;
  attributes: Record<string, unknown>;
}

export interface OtlpSink {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for the processes that export to it */
  endpoint: string;
  /** the spans of one trace received so far */
  spansOf: (traceId: string) => ExportedSpan[];
  stop: () => void;
}

export const startOtlpSink = async (): Promise<OtlpSink> => {
  const binary = testTool('otlp-sink');
  const folder = mkdtempSync(join(tmpdir(), 'otlp-sink-'));
  const file = join(folder, 'spans.jsonl');
  const child: ChildProcess = spawn(binary, ['-listen', '127.0.0.1:0', '-out', file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const address = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`otlp-sink exited with ${code}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      const match = /listening on (\S+)/.exec(chunk.toString());
      if (match) resolve(match[1]!);
    });
  });
  const spans = (): ExportedSpan[] =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as ExportedSpan)
      : [];
  return {
    endpoint: `http://${address}`,
    spansOf: (traceId) => spans().filter((s) => s.traceId === traceId),
    stop: () => {
      child.kill();
      rmSync(folder, { recursive: true, force: true });
    },
  };
};

/** a caller's own W3C context: the trace the platform must continue, and the caller's span */
export const callerContext = () => {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};

/** the spans of a trace whose parent is neither the caller's span nor another span of the trace */
export const orphansOf = (spans: ExportedSpan[], callerSpanId: string): string[] => {
  const ids = new Set(spans.map((s) => s.spanId));
  return spans
    .filter((s) => s.parentSpanId !== callerSpanId && !ids.has(s.parentSpanId))
    .map((s) => `${s.service} ${s.name}`);
};

/**
 * The caller's trace once it holds the spans `complete` looks for and every span's parent has
 * arrived too: processes export on their own schedules, so a child may come before its parent. A
 * parent that is made up never arrives; the poll then fails showing the spans it had.
 */
export const wholeTrace = (
  sink: OtlpSink,
  caller: { traceId: string; spanId: string },
  complete: (spans: ExportedSpan[]) => boolean,
  what: string,
): Promise<ExportedSpan[]> =>
  pollUntil(
    async () => sink.spansOf(caller.traceId),
    (found) => complete(found) && orphansOf(found, caller.spanId).length === 0,
    { timeoutMs: 30_000, what: `${what}, in a trace whose every span's parent has arrived` },
  );

/** whether spans of each name are among the spans */
export const named =
  (...names: string[]) =>
  (spans: ExportedSpan[]): boolean =>
    names.every((name) => spans.some((s) => s.name === name));
