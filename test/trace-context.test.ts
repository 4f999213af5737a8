// The trace context is passed explicitly: with tracing on, no context manager is registered
// (OpenTelemetry's AsyncLocalStorage one makes every promise of a Node 20 process pay, which
// cost a quarter of the blocking throughput), unless BullMQ's hook asks for one
// (telemetry.queueSpans). Spans still connect: a child names its parent's trace, and the W3C
// headers of a context round-trip through a job's carrier.
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import { contextOfCarrier, inSpan, SpanKind, traceCarrier, traceHeaders } from '../src/telemetry/spans.ts';
import { startTracing } from '../src/telemetry/tracing.ts';

/** What `context.active()` returns inside `context.with(ctx)`: ctx only when a context manager is registered. */
function activeInside(): boolean {
  const marked = ROOT_CONTEXT.setValue(Symbol('marker'), true);
  return context.with(marked, () => context.active()) === marked;
}

describe('trace context without a context manager', () => {
  it('tracing on registers none, and spans connect through the contexts passed along', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = startTracing({ otlpEndpoint: undefined, otlpProtocol: 'http/protobuf', serviceName: 'ctx-test', exporter });
    try {
      expect(activeInside()).toBe(false);
      let carrier: Record<string, string> | undefined;
      await inSpan('request', { kind: SpanKind.SERVER, parent: undefined }, async (_span, own) => {
        carrier = traceCarrier(own);
        expect(traceHeaders(own).traceparent).toBe(carrier?.traceparent);
      });
      await inSpan('turn', { kind: SpanKind.CONSUMER, parent: contextOfCarrier(carrier) }, async (_span, own) => {
        await inSpan('invoke_agent', { parent: own }, async () => undefined);
      });
      await tracing.flush();
      const spans = exporter.getFinishedSpans();
      const byName = new Map(spans.map((span) => [span.name, span]));
      const request = byName.get('request');
      expect(byName.get('turn')?.parentSpanContext?.spanId).toBe(request?.spanContext().spanId);
      expect(byName.get('invoke_agent')?.parentSpanContext?.spanId).toBe(byName.get('turn')?.spanContext().spanId);
      expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
      // Outside any span there is nothing to carry.
      expect(traceCarrier(undefined)).toBeUndefined();
      expect(trace.getActiveSpan()).toBeUndefined();
    } finally {
      await tracing.shutdown();
    }
  });

  it('telemetry.queueSpans registers the AsyncLocalStorage manager BullMQ\'s hook needs', async () => {
    const tracing = startTracing({ otlpEndpoint: undefined, otlpProtocol: 'http/protobuf', serviceName: 'ctx-test', exporter: new InMemorySpanExporter(), queueSpans: true });
    try {
      expect(activeInside()).toBe(true);
    } finally {
      await tracing.shutdown();
    }
    expect(activeInside()).toBe(false);
  });
});
