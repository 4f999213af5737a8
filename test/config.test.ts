import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveAgents } from '../src/agents/agent-settings.ts';
import { ConfigError, loadConfig, publicUrlOf } from '../src/config/load.ts';

describe('configuration', () => {
  it('has working defaults', () => {
    const { config } = loadConfig({});
    expect(config).toMatchObject({ redisUrl: 'redis://127.0.0.1:6379', keyPrefix: 'a2a', port: 8080 });
    // One agent, the demo, at the root URLs.
    expect(resolveAgents(config)).toMatchObject({ defaultAgent: 'default', agents: [{ name: 'default', adapter: 'demo', inputPolicy: 'enqueue' }] });
    expect(publicUrlOf(config)).toBe('http://127.0.0.1:8080');
  });

  it('reads a YAML file and lets environment variables override it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'a2a-config-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'port: 9000\nkeyPrefix: from-file\nadapter: ./my-adapter.mjs\nadapterOptions:\n  stepMs: 5\n');
    const { config, baseDir } = loadConfig({ A2A_CONFIG: file, A2A_KEY_PREFIX: 'from-env' });
    expect(config.port).toBe(9000);
    expect(config.keyPrefix).toBe('from-env');
    expect(config.adapterOptions).toEqual({ stepMs: 5 });
    expect(baseDir).toBe(dir); // relative adapter paths resolve against the file's folder
  });

  it('names the variable and the problem for a bad value', () => {
    expect(() => loadConfig({ A2A_PORT: '70000' })).toThrow(ConfigError);
    expect(() => loadConfig({ A2A_PORT: '70000' })).toThrow(/port \(A2A_PORT\)/);
    expect(() => loadConfig({ A2A_KEY_PREFIX: 'has space' })).toThrow(/keyPrefix \(A2A_KEY_PREFIX\)/);
    expect(() => loadConfig({ A2A_ADAPTER_OPTIONS: '{not json' })).toThrow(/A2A_ADAPTER_OPTIONS must be a JSON object/);
  });

  it('rejects unknown keys in a config file instead of ignoring a typo', () => {
    const dir = mkdtempSync(join(tmpdir(), 'a2a-config-'));
    const file = join(dir, 'gateway.json');
    writeFileSync(file, JSON.stringify({ prot: 9000 }));
    expect(() => loadConfig({ A2A_CONFIG: file })).toThrow(/Invalid configuration/);
  });

  it('says which file cannot be read', () => {
    expect(() => loadConfig({ A2A_CONFIG: '/nonexistent/gateway.yaml' })).toThrow(/\/nonexistent\/gateway\.yaml/);
  });
});
