// The cycle check (`npm run check:cycles`, which `npm run typecheck` and so CI run) really fails
// on an import circle, one made of type imports alone included, and passes where there is none.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

describe('the cycle check', () => {
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

  it('runs as part of the type check, over every product source folder', () => {
    const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.typecheck).toContain('npm run check:cycles');
    for (const folder of ['src', 'adapters', 'agent-card', 'queues']) expect(scripts['check:cycles']?.split(' ')).toContain(folder);
  });
});
