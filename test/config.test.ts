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

  it('names an unknown key, where it is, and the closest valid key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'a2a-config-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'maxTurnAttempt: 3\nagents:\n  weather:\n    adapter: demo\n    card:\n      nmae: Weather\n    limits:\n      burts: 5\n');
    let message = '';
    try {
      loadConfig({ A2A_CONFIG: file });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`unknown key 'maxTurnAttempt' in ${file}; did you mean 'maxTurnAttempts'?`);
    expect(message).toContain(`unknown key 'nmae' in agents.weather.card (${file}); did you mean 'name'?`);
    expect(message).toContain(`unknown key 'burts' in agents.weather.limits (${file}); did you mean 'burst'?`);
    // Nothing close: no misleading guess.
    writeFileSync(file, 'zzzzzzzz: 1\n');
    expect(() => loadConfig({ A2A_CONFIG: file })).toThrow(/unknown key 'zzzzzzzz' in .*gateway\.yaml; see docs\/configuration\.md/);
  });

  it('warns about an A2A_* variable one typo away from a known one, and leaves other A2A_* variables alone', () => {
    const { warnings } = loadConfig({ A2A_MAX_TURN_ATTEMPT: '3', A2A_SOMETHING_FOR_A_TOOL: 'x', A2A_TEST_REDIS_URL: 'redis://127.0.0.1:6380', A2A_PORT: '9000' });
    expect(warnings).toEqual(['unknown variable A2A_MAX_TURN_ATTEMPT is ignored; did you mean A2A_MAX_TURN_ATTEMPTS?']);
  });

  it('says which file cannot be read', () => {
    expect(() => loadConfig({ A2A_CONFIG: '/nonexistent/gateway.yaml' })).toThrow(/\/nonexistent\/gateway\.yaml/);
  });

  it('listens on the platform PORT when A2A_PORT is not set, and names PORT when it is bad', () => {
    expect(loadConfig({ PORT: '9123' }).config.port).toBe(9123);
    expect(loadConfig({ PORT: '9123', A2A_PORT: '9124' }).config.port).toBe(9124);
    expect(() => loadConfig({ PORT: 'http' })).toThrow(/port \(PORT\)/);
  });

  it('the gRPC binding is off unless A2A_GRPC_PORT names a port (0 = any free one); a bad value names the variable', () => {
    expect(loadConfig({}).config.grpcPort).toBe('off');
    expect(loadConfig({ A2A_GRPC_PORT: '0' }).config.grpcPort).toBe(0);
    expect(loadConfig({ A2A_GRPC_PORT: '50051', A2A_GRPC_HOST: '0.0.0.0', A2A_GRPC_PUBLIC_ADDRESS: 'a2a.example.com:443' }).config).toMatchObject({ grpcPort: 50051, grpcHost: '0.0.0.0', grpcPublicAddress: 'a2a.example.com:443' });
    expect(loadConfig({ A2A_GRPC_PORT: 'off' }).config.grpcPort).toBe('off');
    expect(() => loadConfig({ A2A_GRPC_PORT: 'grpc' })).toThrow(/grpcPort \(A2A_GRPC_PORT\): a port number \(0 = any free port\) or "off"/);
    expect(() => loadConfig({ A2A_GRPC_PUBLIC_ADDRESS: 'https://a2a.example.com' })).toThrow(/grpcPublicAddress \(A2A_GRPC_PUBLIC_ADDRESS\)/);
  });

  it('NODE_ENV=production turns production mode on, unless A2A_PRODUCTION says otherwise', () => {
    expect(loadConfig({}).config.production).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production' }).config.production).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', A2A_PRODUCTION: 'false' }).config.production).toBe(false);
    expect(loadConfig({ A2A_PRODUCTION: 'true' }).config.production).toBe(true);
  });

  it('reads trustProxy from the environment as true, false or a list of addresses', () => {
    expect(loadConfig({}).config.trustProxy).toBe(false);
    expect(loadConfig({ A2A_TRUST_PROXY: 'true' }).config.trustProxy).toBe(true);
    expect(loadConfig({ A2A_TRUST_PROXY: 'loopback, 10.0.0.0/8' }).config.trustProxy).toEqual(['loopback', '10.0.0.0/8']);
  });

  it('has bounded edge defaults: timeouts for requests, not responses; JSON structure; header count', () => {
    const { config } = loadConfig({});
    expect(config).toMatchObject({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      maxHeaderCount: 100,
      redisCommandTimeoutMs: 2_000,
      jsonLimits: { maxDepth: 64, maxObjectKeys: 1_000, maxArrayLength: 10_000, maxNodes: 100_000 },
      limits: { unauthenticatedPerSecond: 10, unauthenticatedBurst: 50 },
    });
    expect(config.maxConnections).toBeUndefined(); // derived from the open-file limit at start
  });
});
