// A small OTLP/HTTP trace receiver for tests: POST /v1/traces with OTLP/JSON bodies (decoded
// into spans) or protobuf bodies (kept as bytes). Listens on a free loopback port.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind number: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean | string[]>;
  /** service.name of the process that sent it. */
  service: string;
  statusCode: number;
}

export interface OtlpReceiver {
  /** Base URL to give as the OTLP endpoint (no /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Protobuf bodies received, with their content type. */
  protobufBodies: Buffer[];
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpAnyValue[] };
}

function valueOf(value: OtlpAnyValue): string | number | boolean | string[] {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  return (value.arrayValue?.values ?? []).map((entry) => String(valueOf(entry)));
}

function attributesOf(list: { key: string; value: OtlpAnyValue }[] | undefined): ReceivedSpan['attributes'] {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

interface OtlpJsonRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpAnyValue }[] };
    scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: { key: string; value: OtlpAnyValue }[]; status?: { code?: number } }[] }[];
  }[];
}

/** OTLP/JSON ids are hex strings (the exporter writes them so); lower-cased here. */
function decode(body: OtlpJsonRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: span.traceId.toLowerCase(),
          spanId: span.spanId.toLowerCase(),
          parentSpanId: (span.parentSpanId ?? '').toLowerCase(),
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          service,
          statusCode: span.status?.code ?? 0,
        });
      }
    }
  }
  return spans;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const protobufBodies: Buffer[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      const type = request.headers['content-type'] ?? '';
      if (type.includes('json')) spans.push(...decode(JSON.parse(body.toString('utf8')) as OtlpJsonRequest));
      else protobufBodies.push(body);
      // An empty ExportTraceServiceResponse: full success.
      response.writeHead(200, { 'Content-Type': type.includes('json') ? 'application/json' : 'application/x-protobuf' });
      response.end(type.includes('json') ? '{}' : Buffer.alloc(0));
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    protobufBodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
