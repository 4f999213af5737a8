// The import check (`npm run check:cycles`, which `npm run typecheck` and so CI run) really fails
// on an import circle, one made of type imports alone included, and passes where there is none;
// and it fails on a module outside the store importing a Redis key layout (keys-stay-in-store).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEPCRUISE = 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs';

function checkCycles(folder: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [DEPCRUISE, '--config', '.dependency-cruiser.cjs', '--output-type', 'err', folder], { cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, output: `${stdout}${stderr}` });
    });
  });
}

describe('the import check', () => {
  it('fails on a circle of type imports, naming the files of the circle', { timeout: 60_000 }, async () => {
    const { code, output } = await checkCycles('test/fixtures/import-cycle/circle');
    expect(code).not.toBe(0);
    expect(output).toContain('no-circular');
    expect(output).toContain('test/fixtures/import-cycle/circle/order.ts');
    expect(output).toContain('test/fixtures/import-cycle/circle/customer.ts');
  });

  it('passes the same files without the circle', { timeout: 60_000 }, async () => {
    const { code, output } = await checkCycles('test/fixtures/import-cycle/line');
    expect(output).toContain('no dependency violations');
    expect(code).toBe(0);
  });

  it('fails on a module outside the store importing a key layout, naming the rule and the import', { timeout: 60_000 }, async () => {
    const { code, output } = await checkCycles('test/fixtures/store-keys/outside');
    expect(code).not.toBe(0);
    expect(output).toContain('keys-stay-in-store');
    expect(output).toContain('test/fixtures/store-keys/outside/push/outbox.ts → test/fixtures/store-keys/outside/store/keys.ts');
  });

  it('passes the same domain module going through a store object', { timeout: 60_000 }, async () => {
    const { code, output } = await checkCycles('test/fixtures/store-keys/inside');
    expect(output).toContain('no dependency violations');
    expect(code).toBe(0);
  });

  it('keeps the product key layouts, the script loader, caller and definitions to src/store', () => {
    const config = createRequire(import.meta.url)('../.dependency-cruiser.cjs') as { forbidden: { name: string; from: { pathNot: string }; to: { path: string } }[] };
    const rule = config.forbidden.find((each) => each.name === 'keys-stay-in-store');
    const guarded = new RegExp(rule?.to.path ?? '^$');
    const exempt = new RegExp(rule?.from.pathNot ?? '^$');
    const layouts = ['keys.ts', 'scripts.ts', 'script-call.ts', 'limit-scripts.ts', 'push-scripts.ts', 'push/push-keys.ts', 'schedules/schedule-keys.ts'];
    for (const file of layouts) expect(guarded.test(`src/store/${file}`), file).toBe(true);
    for (const file of ['task-store.ts', 'locks.ts', 'channels.ts', 'push/push-store.ts', 'limits/token-buckets.ts']) expect(guarded.test(`src/store/${file}`), file).toBe(false);
    expect(exempt.test('src/store/push/push-store.ts')).toBe(true);
    for (const importer of ['src/push/outbox.ts', 'src/gateway/readiness.ts', 'queues/turns.ts', 'adapters/echo/index.ts']) expect(exempt.test(importer), importer).toBe(false);
  });

  it('runs as part of the type check, over every product source folder', () => {
    const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.typecheck).toContain('npm run check:cycles');
    for (const folder of ['src', 'adapters', 'agent-card', 'queues']) expect(scripts['check:cycles']?.split(' ')).toContain(folder);
  });
});
