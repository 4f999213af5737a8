// The default OTLP protocol, http/protobuf: spans reach the receiver at <endpoint>/v1/traces as
// protobuf (ids as raw bytes, names as UTF-8), and tracing off starts nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inSpan } from '../src/telemetry/spans.ts';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace-node';
import { startTracing, TraceStartsSampler, tracesUrlOf, tracingEnabled, type TracingHandle } from '../src/telemetry/tracing.ts';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.ts';
import { waitFor } from './support/harness.ts';

let receiver: OtlpReceiver;
let tracing: TracingHandle;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
});

afterAll(async () => {
  await tracing?.shutdown();
  await receiver?.close();
});

describe('OTLP over http/protobuf', () => {
  it('without an endpoint nothing starts; with one, spans arrive as protobuf', async () => {
    expect(startTracing({ otlpEndpoint: undefined, otlpProtocol: 'http/protobuf', serviceName: 'off' }).enabled).toBe(false);
    expect(tracingEnabled()).toBe(false);
    await inSpan('not recorded', { parent: undefined }, async (span) => expect(span).toBeUndefined());

    tracing = startTracing({ otlpEndpoint: receiver.url, otlpProtocol: 'http/protobuf', serviceName: 'protobuf-test' });
    expect(tracingEnabled()).toBe(true);
    let traceId = '';
    await inSpan('a2a protobuf check', { kind: 2, parent: undefined }, async (span) => {
      traceId = span?.spanContext().traceId ?? '';
    });
    await tracing.flush();
    const body = await waitFor(() => receiver.protobufBodies.find((candidate) => candidate.includes(Buffer.from(traceId, 'hex'))), 10_000, 'a protobuf export');
    expect(body.includes(Buffer.from('a2a protobuf check'))).toBe(true);
    expect(body.includes(Buffer.from('protobuf-test'))).toBe(true);
  });

  it('new traces start at requests and jobs, sampleRatio of them; root housekeeping spans never', () => {
    const decide = (ratio: number, kind: SpanKind): SamplingDecision => new TraceStartsSampler(ratio).shouldSample(ROOT_CONTEXT, 'f'.repeat(32), 'x', kind, {}, []).decision;
    expect(decide(1, SpanKind.SERVER)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(1, SpanKind.CONSUMER)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(1, SpanKind.INTERNAL)).toBe(SamplingDecision.NOT_RECORD);
    expect(decide(0, SpanKind.SERVER)).toBe(SamplingDecision.NOT_RECORD);
  });

  it('the endpoint is the collector base URL; /v1/traces is appended once', () => {
    expect(tracesUrlOf('http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrlOf('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrlOf('http://collector:4318/v1/traces')).toBe('http://collector:4318/v1/traces');
  });
});
