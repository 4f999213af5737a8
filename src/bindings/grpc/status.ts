// An A2AError as a gRPC status (spec 10.6): the status code of the error's mapping (spec 5.4),
// its message, and a google.rpc.Status in the `grpc-status-details-bin` trailer whose details
// are the ones the HTTP bindings send as ProtoJSON (A2AError.details(): ErrorInfo with domain
// a2a-protocol.org, BadRequest field violations, RetryInfo), encoded in binary. Encoded with
// @bufbuild/protobuf's wire writer: the five google.rpc messages are too small to justify
// generated code, and the SDK's own helper encodes ErrorInfo only.
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { Metadata, status as GrpcStatus, type ServerErrorResponse } from '@grpc/grpc-js';
import type { A2AError } from '../../protocol/errors.ts';

/** Trailing metadata key of the binary google.rpc.Status (the gRPC convention). */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';
const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';

type Detail = Record<string, unknown>;

const str = (value: unknown): string => (typeof value === 'string' ? value : String(value ?? ''));

function encodeErrorInfo(detail: Detail): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).string(str(detail.reason));
  writer.tag(2, WireType.LengthDelimited).string(str(detail.domain));
  const metadata = (detail.metadata ?? {}) as Record<string, unknown>;
  for (const [key, value] of Object.entries(metadata)) {
    writer.tag(3, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(key).tag(2, WireType.LengthDelimited).string(str(value)).join();
  }
  return writer.finish();
}

function encodeBadRequest(detail: Detail): Uint8Array {
  const writer = new BinaryWriter();
  for (const violation of (detail.fieldViolations ?? []) as { field?: unknown; description?: unknown }[]) {
    writer.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(str(violation.field)).tag(2, WireType.LengthDelimited).string(str(violation.description)).join();
  }
  return writer.finish();
}

function encodeRetryInfo(detail: Detail): Uint8Array {
  // ProtoJSON Duration "<seconds>s" → google.protobuf.Duration { seconds }.
  const seconds = Number.parseInt(str(detail.retryDelay), 10);
  return new BinaryWriter().tag(1, WireType.LengthDelimited).fork().tag(1, WireType.Varint).int64(Number.isFinite(seconds) ? seconds : 0).join().finish();
}

const ENCODERS: Record<string, (detail: Detail) => Uint8Array> = {
  [ERROR_INFO]: encodeErrorInfo,
  [BAD_REQUEST]: encodeBadRequest,
  [RETRY_INFO]: encodeRetryInfo,
};

/** google.rpc.Status { code, message, details } in binary. */
export function encodeStatusDetails(code: number, message: string, details: readonly Detail[]): Buffer {
  const writer = new BinaryWriter();
  writer.tag(1, WireType.Varint).int32(code);
  writer.tag(2, WireType.LengthDelimited).string(message);
  for (const detail of details) {
    const typeUrl = str(detail['@type']);
    const encode = ENCODERS[typeUrl];
    if (encode === undefined) continue;
    writer.tag(3, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(typeUrl).tag(2, WireType.LengthDelimited).bytes(encode(detail)).join();
  }
  return Buffer.from(writer.finish());
}

/** The gRPC status code an error maps to (spec 5.4). */
export function grpcCodeOf(error: A2AError): number {
  return GrpcStatus[error.mapping.grpcStatus as keyof typeof GrpcStatus] ?? GrpcStatus.UNKNOWN;
}

/** A status with a message and the details trailer (which repeats code and message, as google.rpc.Status does). */
export function grpcStatus(code: number, message: string, details: readonly Detail[] = []): ServerErrorResponse {
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_KEY, encodeStatusDetails(code, message, details));
  return Object.assign(new Error(message), { code, details: message, metadata });
}

/** What a handler ends a call with when an operation or a step refuses it. */
export function grpcStatusOf(error: A2AError): ServerErrorResponse {
  return grpcStatus(grpcCodeOf(error), error.message, error.details());
}
