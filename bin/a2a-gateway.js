#!/usr/bin/env node
// Entry point for `a2a-gateway` (the package's command, the image's ENTRYPOINT): runs the compiled
// CLI in dist/, made by `npm run build` (and by `npm ci` in a checkout, through `prepare`).
import { existsSync } from 'node:fs';
import module from 'node:module';

// Node 22.1+ keeps V8's compiled code of the modules loaded here (in the OS temp folder), so a
// restart skips recompiling them; older lines lack the call and start as before.
module.enableCompileCache?.();

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('a2a-gateway: dist/ is not built. In a checkout run `npm run build` (or `npm ci`, which builds), then start again.\n');
  process.exit(1);
}
if (process.argv[2] === 'healthcheck') {
  // The container's probe, every few seconds: without the gateway and worker modules.
  const { runHealthcheckCommand } = await import(new URL('../dist/src/cli/healthcheck.js', import.meta.url).href);
  await runHealthcheckCommand();
} else {
  await import(main.href);
}
