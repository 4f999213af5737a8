// The agent behind the gateway for an official A2A TCK run (docs/conformance.md). The TCK
// tells its System Under Test what to do through the messageId's prefix: its scenarios
// (scenarios/*.feature in the TCK) say, per prefix, which states, artifacts or direct message the
// agent produces. This adapter does exactly that, so the run measures the gateway (the bindings,
// the task store, streams, errors) and not the demo agent's skills. Written from the scenario
// descriptions; load it with A2A_ADAPTER=./tools/conformance/tck-agent.mjs.
//
// Options (A2A_ADAPTER_OPTIONS): {"holdMs": 4000} is how long a "test-resubscribe-message-id"
// task stays working; the TCK needs at least twice its TCK_STREAMING_TIMEOUT (2 s by default).

const TEXT = 'text/plain';

/** Each scenario: its messageId prefix, then what the turn does. Longest prefixes first. */
function scenarios(holdMs) {
  return [
    ['tck-stream-artifact-chunked', async (ctx) => {
      await ctx.emitStatus('working');
      await ctx.emitArtifact({ artifactId: 'chunked', parts: [{ text: 'chunk-1 ' }] });
      await ctx.emitArtifact({ artifactId: 'chunked', parts: [{ text: 'chunk-2' }], append: true, lastChunk: true });
      return { state: 'completed' };
    }],
    ['tck-stream-artifact-text', working(text('Streamed text content'))],
    ['tck-stream-artifact-file', working(file())],
    ['tck-stream-ordering-001', working(text('Ordered output'))],
    ['tck-stream-001', working(text('Stream hello from TCK'))],
    ['tck-stream-002', async () => ({ state: 'completed' })],
    ['tck-stream-003', working(text('Stream task lifecycle'))],
    ['test-resubscribe-message-id', async (ctx) => {
      await ctx.emitStatus('working');
      await wait(holdMs, ctx.signal);
      return { state: 'completed' };
    }],
    ['tck-artifact-file-url', artifact({ url: 'https://example.com/output.txt', filename: 'output.txt', mediaType: TEXT })],
    ['tck-artifact-file', artifact(file())],
    ['tck-artifact-text', artifact(text('Generated text content'))],
    ['tck-artifact-data', artifact({ data: { key: 'value', count: 42 }, mediaType: 'application/json' })],
    ['tck-message-response', async () => ({ state: 'message', message: 'Direct message response' })],
    ['tck-input-required', async () => ({ state: 'input-required', message: 'More input is needed.' })],
    ['tck-reject-task', async () => ({ state: 'rejected', message: 'rejected' })],
    ['tck-complete-task', async () => ({ state: 'completed', message: 'Hello from TCK' })],
  ];
}

function text(value) {
  return { text: value };
}

function file() {
  // "tck", base64: a small file part with a name and a media type.
  return { raw: 'dGNr', filename: 'output.txt', mediaType: TEXT };
}

/** Completes the task with one artifact holding `part`. */
function artifact(part) {
  return async (ctx) => {
    await ctx.emitArtifact({ artifactId: 'result', parts: [part], lastChunk: true });
    return { state: 'completed' };
  };
}

/** Goes to working, streams one artifact holding `part`, then completes. */
function working(part) {
  const emit = artifact(part);
  return async (ctx) => {
    await ctx.emitStatus('working');
    return emit(ctx);
  };
}

/** Waits `ms` but ends early when the task is canceled (the runtime then records it canceled). */
function wait(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new DOMException('canceled', 'AbortError'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new DOMException('canceled', 'AbortError'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function createAdapter(options = {}) {
  const holdMs = Number.isInteger(options.holdMs) && options.holdMs >= 0 ? options.holdMs : 4000;
  const table = scenarios(holdMs);
  return {
    name: 'tck-sut',
    version: '1.0.0',
    directMessages: true,
    skills: [
      {
        id: 'tck',
        name: 'TCK scenarios',
        description: 'Does what the official A2A TCK asks of its System Under Test, chosen by the messageId prefix.',
        tags: ['tck', 'conformance'],
        examples: ['tck-complete-task-1'],
      },
    ],
    defaultInputModes: [TEXT, 'application/json'],
    defaultOutputModes: [TEXT, 'application/json'],
    async run(ctx) {
      // The latest input decides: a follow-up to an input-required task names its own prefix.
      const messageId = ctx.input[ctx.input.length - 1]?.messageId ?? '';
      const match = table.find(([prefix]) => messageId.startsWith(prefix));
      if (match) return match[1](ctx);
      return { state: 'completed', message: `Done: ${messageId}` };
    },
  };
}
