// Unit tests of the one piece of SSE framing the gateway writes itself (frameSseEvent). Each
// frame is also read back with eventsource-parser, the parser an independent client would use,
// so "well framed" means "an SSE client sees exactly this event".
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import { frameSseEvent } from '../src/bindings/sse/sse-writer.ts';

function parseAll(stream: string): { events: EventSourceMessage[]; comments: string[] } {
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  const parser = createParser({
    onEvent: (message) => events.push(message),
    onComment: (comment) => comments.push(comment),
  });
  parser.feed(stream);
  return { events, comments };
}

describe('frameSseEvent', () => {
  it('writes event, id and data lines and ends the frame with a blank line', () => {
    const frame = frameSseEvent('{"a":1}', { id: '1700000000000-0', event: 'update' });
    expect(frame).toBe('event: update\nid: 1700000000000-0\ndata: {"a":1}\n\n');
    const { events } = parseAll(frame);
    expect(events).toEqual([{ id: '1700000000000-0', event: 'update', data: '{"a":1}' }]);
  });

  it('writes only a data line when neither id nor event is given', () => {
    expect(frameSseEvent('hello')).toBe('data: hello\n\n');
    const { events } = parseAll(frameSseEvent('hello'));
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toBe('hello');
    expect(events[0]?.id).toBeUndefined();
    expect(events[0]?.event).toBeUndefined();
  });

  it('omits an empty id rather than resetting the client\'s Last-Event-ID', () => {
    // "id:" with an empty value would reset the last event id in a browser's EventSource.
    expect(frameSseEvent('x', { id: '' })).toBe('data: x\n\n');
    expect(frameSseEvent('x', { id: '' })).not.toContain('id:');
  });

  it('rejects ids containing a line break (they would inject fields into the stream)', () => {
    expect(() => frameSseEvent('x', { id: '1-0\ndata: injected' })).toThrow(/line break/);
    expect(() => frameSseEvent('x', { id: '1-0\r' })).toThrow(/line break/);
    expect(() => frameSseEvent('x', { id: '1-0\r\n' })).toThrow(/line break/);
  });

  it('rejects event names containing a line break', () => {
    expect(() => frameSseEvent('x', { event: 'error\nid: 9-9' })).toThrow(/line break/);
    expect(() => frameSseEvent('x', { event: 'error\r' })).toThrow(/line break/);
  });

  it('splits multi-line data into one data line per line (LF, CRLF and CR)', () => {
    const frame = frameSseEvent('one\ntwo\r\nthree\rfour', { id: '5-1' });
    expect(frame).toBe('id: 5-1\ndata: one\ndata: two\ndata: three\ndata: four\n\n');
    // The client joins data lines with LF: the payload survives (line endings normalized).
    const { events } = parseAll(frame);
    expect(events).toEqual([{ id: '5-1', event: undefined, data: 'one\ntwo\nthree\nfour' }]);
  });

  it('keeps empty lines of the data as empty data lines', () => {
    const frame = frameSseEvent('a\n\nb');
    expect(frame).toBe('data: a\ndata: \ndata: b\n\n');
    expect(parseAll(frame).events[0]?.data).toBe('a\n\nb');
  });

  it('a sequence of frames reads back as the same sequence of events', () => {
    const payloads = [
      { data: JSON.stringify({ statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING' } } }), id: '1-0' },
      { data: JSON.stringify({ text: 'line1\nline2' }), id: '1-1' },
      { data: 'plain', id: '2-0', event: 'error' },
    ];
    const stream = payloads.map((p) => frameSseEvent(p.data, { id: p.id, event: p.event })).join('') + ': keep-alive\n\n';
    const { events, comments } = parseAll(stream);
    expect(events.map((e) => ({ data: e.data, id: e.id, event: e.event }))).toEqual(payloads.map((p) => ({ ...p, event: p.event })));
    expect(comments.map((c) => c.trim())).toEqual(['keep-alive']);
  });
});

describe('SseStreams: a reader that does not keep up', () => {
  it('is ended once its unsent bytes pass the cap, with a last frame saying how to resume', async () => {
    const { createServer, request } = await import('node:http');
    const { SseStreams } = await import('../src/bindings/sse/sse-writer.ts');
    const cap = 64 * 1024;
    const streams = new SseStreams(60_000, cap);
    const frame = 'x'.repeat(32 * 1024);
    let sent = 0;
    let bufferedAtEnd = -1;
    let resolveReceived: (value: { events: EventSourceMessage[]; ids: number }) => void = () => undefined;
    const received = new Promise<{ events: EventSourceMessage[]; ids: number }>((resolve) => {
      resolveReceived = resolve;
    });
    const ended = new Promise<void>((resolveEnded) => {
      const server = createServer((_req, res) => {
        const writer = streams.open(res, () => {
          bufferedAtEnd = res.writableLength;
          clearInterval(timer);
          server.close();
          resolveEnded();
        }, { slowReaderFrame: () => ({ event: 'error', data: '{"reason":"SLOW_READER","resume":"Last-Event-ID"}' }) });
        const timer = setInterval(() => {
          for (let i = 0; i < 8 && !writer.closed; i++) writer.send(frame, { id: `1-${sent++}` });
        }, 2);
      });
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
          res.pause(); // never reads until the server gave up
          void ended.then(() => {
            let text = '';
            res.on('data', (chunk: Buffer) => {
              text += chunk.toString();
            });
            res.on('end', () => {
              const { events } = parseAll(text);
              resolveReceived({ events, ids: events.filter((e) => e.id !== undefined).length });
            });
            res.resume();
          });
        });
        req.end();
      });
    });
    await ended;
    expect(streams.size).toBe(0);
    // Bounded: what waited for the reader never grew far past the cap (plus one frame and the last one).
    expect(bufferedAtEnd).toBeLessThanOrEqual(cap + frame.length + 1024);
    const { events, ids } = await received;
    // The reader gets every event that was written, then the last frame, then the end.
    expect(ids).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({ event: 'error' });
    expect(events.at(-1)?.data).toContain('SLOW_READER');
    expect(events.slice(0, -1).every((event, i) => event.id === `1-${i}`)).toBe(true);
  });
});
