import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { isDomainError } from '../../domain/shared/errors';
import type { Logger } from '../observability/logger';

/**
 * gRPC plumbing (DESIGN.md engines: "generated code from the repo's proto/"): services are
 * described by the .proto files under proto/, loaded at start by @grpc/proto-loader (no build
 * step, the files are the one source), served and called with @grpc/grpc-js. Messages keep the
 * proto's field names (snake_case), int64 travel as decimal strings, enums as their names, and a
 * field left out stays absent (so optional fields and sub-messages keep their presence).
 */
export const PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

export const loadService = (file: string, service: string): grpc.ServiceDefinition => {
  const definitions = protoLoader.loadSync(file, LOADER_OPTIONS);
  const found = definitions[service];
  if (!found || 'format' in found) throw new Error(`${file} defines no service ${service}`);
  return found;
};

export interface TlsFiles {
  /** a PEM file path, or the PEM text itself */
  cert: string;
  key: string;
  ca: string;
}

const pem = (value: string): Buffer =>
  Buffer.from(value.trimStart().startsWith('-----BEGIN') ? value : readFileSync(value, 'utf8'));

/** mutual TLS (a client must present a certificate signed by the CA), or plaintext (loopback only: checked by the settings) */
export const serverCredentials = (tls: TlsFiles | null): grpc.ServerCredentials =>
  tls
    ? grpc.ServerCredentials.createSsl(pem(tls.ca), [{ cert_chain: pem(tls.cert), private_key: pem(tls.key) }], true)
    : grpc.ServerCredentials.createInsecure();

export const channelCredentials = (tls: TlsFiles | null): grpc.ChannelCredentials =>
  tls ? grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert)) : grpc.credentials.createInsecure();

const BY_NAME = grpc.status as unknown as Record<string, grpc.status>;

/** a context's own mapping of refusals to status names (by suffix); null leaves it to the HTTP status */
export type StatusNames = (suffix: string, status: number, code: unknown) => string | null;

/** the gRPC status of an error: the context's mapping names it or its HTTP status decides; anything else is INTERNAL */
export const grpcStatusOf = (error: unknown, names?: StatusNames): grpc.status => {
  if (!isDomainError(error)) return grpc.status.INTERNAL;
  const named = names?.(error.suffix, error.status, error.extensions?.code);
  if (named && named in BY_NAME) return BY_NAME[named]!;
  switch (error.status) {
    case 400:
      return grpc.status.INVALID_ARGUMENT;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.NOT_FOUND;
    case 409:
      return grpc.status.ALREADY_EXISTS;
    case 422:
      return grpc.status.FAILED_PRECONDITION;
    case 429:
      return grpc.status.RESOURCE_EXHAUSTED;
    case 503:
      return grpc.status.UNAVAILABLE;
    case 504:
      return grpc.status.DEADLINE_EXCEEDED;
    default:
      return grpc.status.INTERNAL;
  }
};

export const toServiceError = (error: unknown, names?: StatusNames): Partial<grpc.ServiceError> => {
  const code = grpcStatusOf(error, names);
  const metadata = new grpc.Metadata();
  if (isDomainError(error)) {
    metadata.set('problem-type', error.suffix);
    if (error.errors?.length) metadata.set('problem-errors', JSON.stringify(error.errors));
    return { code, details: error.detail, metadata };
  }
  return { code, details: 'An unexpected error occurred.', metadata };
};

export type UnaryHandler<Req, Res> = (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>;

/** an async handler as grpc-js calls it: its refusals become statuses, unexpected failures INTERNAL (logged) */
export const unary =
  <Req, Res>(
    logger: Logger,
    name: string,
    handler: UnaryHandler<Req, Res>,
    names?: StatusNames,
  ): grpc.handleUnaryCall<Req, Res> =>
  (call, callback) => {
    handler(call.request, call).then(
      (response) => callback(null, response),
      (error: unknown) => {
        if (!isDomainError(error)) logger.error({ err: error, rpc: name }, 'gRPC call failed');
        callback(toServiceError(error, names));
      },
    );
  };

export interface GrpcServer {
  /** the port it listens on (the one given, or the one chosen for port 0) */
  port: number;
  close(): Promise<void>;
}

export const startGrpcServer = async (options: {
  host: string;
  port: number;
  tls: TlsFiles | null;
  services: { definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }[];
}): Promise<GrpcServer> => {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  for (const s of options.services) server.addService(s.definition, s.implementation);
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port}`, serverCredentials(options.tls), (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 5_000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
};
