// `a2a-gateway admin …` against a running gateway: put, get, list, delete with a stale
// --if-match (exit 3, nothing changed), the audit, export, and apply --dry-run showing what it
// would change without changing it.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runAdminCommand } from '../src/cli/admin.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { ROOT, startTestGateway, type TestGateway } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';

describe('a2a-gateway admin', () => {
  let gw: TestGateway;
  let dir: string;
  let env: Record<string, string>;

  /** The command as the binary runs it (a process of its own: slow to start, so used once). */
  const spawned = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'admin', ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      });
    });
  /** The same command run in this process, its output captured. */
  const cli = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
    let stdout = '';
    let stderr = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true));
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true));
    try {
      const code = await runAdminCommand(args, { ...process.env, ...env });
      return { code, stdout, stderr };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  };

  beforeAll(async () => {
    const issuer = await createTestIssuer();
    gw = await startTestGateway({ name: 'admin-cli', config: { auth: { enabled: true, issuers: [issuer.config] } } });
    dir = await mkdtemp(join(tmpdir(), 'a2a-admin-cli-'));
    env = { A2A_ADMIN_URL: gw.url, A2A_ADMIN_TOKEN: await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'ops' }) };
  });
  afterAll(async () => {
    await gw?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('puts, gets, lists and deletes a partner, refusing a stale --if-match', async () => {
    const file = join(dir, 'partner.yaml');
    const publicKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    await writeFile(file, `scopes: [a2a:read]\nkeys:\n  - keyId: cli-key\n    publicKey: ${JSON.stringify(publicKey)}\n`);
    const put = await cli('partners', 'put', 'cli-partner', '--file', file);
    expect(put.stderr).toBe('');
    expect(JSON.parse(put.stdout)).toMatchObject({ name: 'cli-partner', version: 1 });
    expect(JSON.parse((await cli('partners', 'get', 'cli-partner')).stdout)).toMatchObject({ scopes: ['a2a:read'] });
    expect(JSON.parse((await cli('partners', 'list')).stdout).items).toHaveLength(1);

    const stale = await cli('partners', 'delete', 'cli-partner', '--if-match', '7');
    expect(stale.code).toBe(3);
    expect(stale.stderr).toContain('412');
    expect(JSON.parse((await cli('partners', 'get', 'cli-partner')).stdout)).toMatchObject({ version: 1 });

    const audit = JSON.parse((await cli('audit')).stdout) as { items: { action: string; name: string; actor: string }[] };
    expect(audit.items[0]).toMatchObject({ action: 'create', name: 'cli-partner', actor: 'user:test:ops' });

    const exported = JSON.parse((await cli('export')).stdout) as { partners: { name: string }[] };
    expect(exported.partners.map((partner) => partner.name)).toEqual(['cli-partner']);

    const desired = join(dir, 'desired.json');
    await writeFile(desired, JSON.stringify({ partners: [{ ...exported.partners[0], scopes: ['a2a:read', 'a2a:write'] }] }));
    const dryRun = await cli('apply', '--file', desired, '--dry-run');
    expect(dryRun.stdout).toContain('replace    partners/cli-partner (version 1)');
    expect(dryRun.stdout).toContain('nothing was changed');
    expect(JSON.parse((await cli('partners', 'get', 'cli-partner')).stdout)).toMatchObject({ version: 1, scopes: ['a2a:read'] });
    await cli('apply', '--file', desired);
    expect(JSON.parse((await cli('partners', 'get', 'cli-partner')).stdout)).toMatchObject({ version: 2, scopes: ['a2a:read', 'a2a:write'] });

    expect((await cli('partners', 'delete', 'cli-partner', '--if-match', '2')).code).toBe(0);
    expect((await cli('partners', 'get', 'cli-partner')).code).toBe(1);
  });

  it('runs as a2a-gateway admin', async () => {
    const listed = await spawned('issuers', 'list');
    expect(listed.stderr).toBe('');
    expect(JSON.parse(listed.stdout)).toMatchObject({ items: [{ name: 'test', source: 'config' }] });
  }, 90_000);

  it('says what is wrong with a command', async () => {
    const unknown = await cli('gadgets', 'list');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown admin command "gadgets"');
    expect((await cli()).code).toBe(2);
  });
});
