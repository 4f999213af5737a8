// A raw gRPC caller for the gateway's A2AService: the SDK's service definition (binary codec of
// a2a.proto) without the SDK's client, so error paths arrive exactly as they travel: status
// code, message, and the google.rpc.Status in `grpc-status-details-bin`, decoded here.
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { decodeErrorInfo, decodeStatus, type DecodedErrorInfo } from '@a2a-js/sdk/errors/grpc';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { credentials, makeGenericClientConstructor, Metadata, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type { StreamResponse } from '@a2a-js/sdk';

export interface GrpcOutcome<T> {
  /** Undefined when the call succeeded. */
  error: ServiceError | undefined;
  response: T | undefined;
  /** Initial metadata the server sent (a2a-extensions). */
  headers: Metadata | undefined;
}

export interface GrpcStreamOutcome {
  events: StreamResponse[];
  error: ServiceError | undefined;
}

export interface DecodedDetails {
  errorInfo: DecodedErrorInfo | undefined;
  fieldViolations: { field: string; description: string }[];
  retryDelaySeconds: number | undefined;
}

type Method = (...args: unknown[]) => unknown;

export function metadataOf(entries: Record<string, string>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return metadata;
}

/** Raw calls to one gateway's gRPC address; `close()` when done. */
export function rawGrpc(address: string) {
  const Client = makeGenericClientConstructor(A2AService, 'A2AService');
  const client = new Client(address, credentials.createInsecure()) as unknown as Record<string, Method> & { close(): void };
  // The same method paths with the request bytes passed through as given (for undecodable requests).
  const RawClient = makeGenericClientConstructor(
    Object.fromEntries(
      Object.entries(A2AService).map(([name, method]) => [name, { ...method, requestSerialize: (bytes: Buffer) => bytes }]),
    ) as unknown as typeof A2AService,
    'A2AServiceRaw',
  );
  const rawClient = new RawClient(address, credentials.createInsecure()) as unknown as Record<string, Method> & { close(): void };

  const unaryOn = <T>(on: Record<string, Method>, method: string, request: unknown, metadata: Metadata): Promise<GrpcOutcome<T>> =>
    new Promise((resolve) => {
      let headers: Metadata | undefined;
      const call = (on[method] as Method).call(on, request, metadata, (error: ServiceError | null, response: T) => {
        resolve({ error: error ?? undefined, response: error === null ? response : undefined, headers });
      }) as { on(event: 'metadata', listener: (metadata: Metadata) => void): void };
      call.on('metadata', (received) => {
        headers = received;
      });
    });

  return {
    unary: <T = unknown>(method: string, request: unknown, metadata: Metadata = metadataOf({ 'a2a-version': '1.0' })) => unaryOn<T>(client, method, request, metadata),
    /** A unary call whose request is these bytes, unencoded. */
    unaryBytes: (method: string, bytes: Buffer, metadata: Metadata = metadataOf({ 'a2a-version': '1.0' })) => unaryOn(rawClient, method, bytes, metadata),
    /** Opens a server stream: the call, and every event until it ends. */
    stream(method: string, request: unknown, metadata: Metadata = metadataOf({ 'a2a-version': '1.0' }), onEvent?: (event: StreamResponse) => void): { call: ClientReadableStream<StreamResponse>; done: Promise<GrpcStreamOutcome> } {
      const call = (client[method] as Method).call(client, request, metadata) as ClientReadableStream<StreamResponse>;
      const events: StreamResponse[] = [];
      const done = new Promise<GrpcStreamOutcome>((resolve) => {
        call.on('data', (event: StreamResponse) => {
          events.push(event);
          onEvent?.(event);
        });
        call.on('error', (error: ServiceError) => resolve({ events, error }));
        call.on('end', () => resolve({ events, error: undefined }));
      });
      return { call, done };
    },
    close() {
      client.close();
      rawClient.close();
    },
  };
}

/** The ErrorInfo, BadRequest violations and RetryInfo of a failed call's google.rpc.Status. */
export function detailsOf(error: ServiceError): DecodedDetails {
  const [blob] = error.metadata.get('grpc-status-details-bin');
  const result: DecodedDetails = { errorInfo: undefined, fieldViolations: [], retryDelaySeconds: undefined };
  if (blob === undefined) return result;
  const status = decodeStatus(blob as Buffer);
  for (const detail of status.details) {
    if (detail.typeUrl === 'type.googleapis.com/google.rpc.ErrorInfo') result.errorInfo = decodeErrorInfo(detail.value);
    if (detail.typeUrl === 'type.googleapis.com/google.rpc.BadRequest') {
      const reader = new BinaryReader(detail.value);
      while (reader.pos < reader.len) {
        reader.tag();
        const violation = new BinaryReader(reader.bytes());
        const fields: string[] = [];
        while (violation.pos < violation.len) {
          violation.tag();
          fields.push(violation.string());
        }
        result.fieldViolations.push({ field: fields[0] ?? '', description: fields[1] ?? '' });
      }
    }
    if (detail.typeUrl === 'type.googleapis.com/google.rpc.RetryInfo') {
      const reader = new BinaryReader(detail.value);
      reader.tag();
      const duration = new BinaryReader(reader.bytes());
      duration.tag();
      result.retryDelaySeconds = Number(duration.int64());
    }
  }
  return result;
}

/** The id a gRPC stream event carries (metadata.a2aGateway.eventId: what SSE sends as `id:`). */
export function eventIdOf(event: StreamResponse): string {
  const metadata = event.payload?.value.metadata as { a2aGateway?: { eventId?: string } } | undefined;
  return metadata?.a2aGateway?.eventId ?? '';
}
