// The import rules `npm run check:cycles` holds the product sources to (part of `npm run
// typecheck`, so CI runs it). Type-only imports count like any other: a circle through
// `import type` still ties the files of the circle together.

// The store's folder: src/store, or a fixture's (test/fixtures/<name>/<case>/store), so the test
// of the rule below proves it on fixtures with the same layout.
const STORE = '^(src|test/fixtures/[^/]+/[^/]+)/store/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files that import each other in a loop, type imports included. Move what both need into a lower module.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'protocol-stays-low',
      severity: 'error',
      comment:
        'src/protocol (wire types, schemas, errors, the operation specs) imports nothing from the runtime: handlers import specs, never the other way.',
      from: { path: '^src/protocol/' },
      to: { path: '^(src|adapters|agent-card|queues)/', pathNot: '^src/(protocol|validation|logging)/' },
    },
    {
      name: 'keys-stay-in-store',
      severity: 'error',
      comment:
        'Redis key layouts (store/keys.ts, store/<domain>/<domain>-keys.ts), the script loader (store/scripts.ts), the script caller (store/script-call.ts) and the script definitions (store/*-scripts.ts) are the store\'s own: code outside src/store calls a store function or object instead (docs/architecture.md, "Where to find").',
      from: { pathNot: STORE },
      to: { path: `${STORE}(keys|scripts|script-call|[a-z-]+-scripts|[a-z-]+/[a-z-]+-keys)\\.ts$` },
    },
  ],
  options: {
    // Counts `import type` and type-only re-exports, which the compiled output drops.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
