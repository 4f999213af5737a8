// A minimal user adapter for a2a-gateway: it answers every message with the message's text in
// upper case. Point the gateway at it with `A2A_ADAPTER=./examples/echo-adapter.mjs`, or
// `adapter: ./echo-adapter.mjs` in a config file (relative paths are resolved against the config
// file's folder, else the working directory); `adapterOptions` (or A2A_ADAPTER_OPTIONS, e.g.
// '{"suffix":"!"}') reaches the factory below. Plain JavaScript on purpose: the gateway imports
// the file as an ES module, so no build step is needed.

// The gateway calls this factory once at startup with the adapter's `options` from the config.
// A named `createAdapter` export is what the loader looks for first; a default export of the
// same factory (or of the adapter object itself) works too.
export function createAdapter(options = {}) {
  // Options come straight from configuration, so they are validated here rather than trusted.
  const suffix = typeof options.suffix === 'string' ? options.suffix : '';

  return {
    // name and version are recorded on every task this adapter runs, so a task can always be
    // traced back to the code that produced it. Bump the version when behaviour changes.
    name: 'upper-echo',
    version: '1.0.0',

    // Skills are published on the agent card; clients read them to decide what to send.
    skills: [
      {
        id: 'upper',
        name: 'Upper-case echo',
        description: 'Replies with the text of your message in upper case.',
        tags: ['example', 'echo'],
        examples: ['hello there'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
      },
    ],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],

    // One call per turn. Everything the adapter does goes through `ctx`, because the gateway
    // fences those writes with the task's lease; an adapter must not keep its own task state.
    async run(ctx) {
      // Several follow-up messages may be queued into one turn, so all inputs are read.
      const text = ctx.input
        .flatMap((message) => message.parts)
        .map((part) => (typeof part.text === 'string' ? part.text : ''))
        .join('');

      // A canceled task should stop doing work; throwing an AbortError ends the turn promptly
      // and the gateway records the task as canceled.
      if (ctx.signal.aborted) throw new DOMException('canceled', 'AbortError');

      // Results are artifacts, not the status message: they are stored and streamed to clients.
      await ctx.emitArtifact({
        artifactId: 'upper',
        name: 'upper',
        parts: [{ text: text.toUpperCase() + suffix }],
        lastChunk: true,
      });

      // The returned outcome becomes the task's final status.
      return { state: 'completed', message: 'done' };
    },
  };
}
