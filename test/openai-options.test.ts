// The openai adapter's options and key source are checked at load time, and a bad one stops
// `a2a-gateway start` with one line naming it.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveApiKey } from '../adapters/openai/api-key.ts';
import { parseOpenAIOptions } from '../adapters/openai/options.ts';
import { loadAdapter } from '../adapters/module-loader.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { REDIS_URL, ROOT, uniquePrefix } from './support/harness.ts';

const BASE = { baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3' };

describe('parseOpenAIOptions', () => {
  it('fills in the documented defaults', () => {
    expect(parseOpenAIOptions(BASE)).toEqual({
      ...BASE,
      maxTokensField: 'max_tokens',
      stream: true,
      streamUsage: true,
      askUser: true,
      contextTasks: 20,
      maxMessages: 100,
      maxChars: 200_000,
      maxRetries: 4,
      maxRetryDelayMs: 30_000,
      retryBaseDelayMs: 500,
      requestTimeoutMs: 600_000,
      streamIdleTimeoutMs: 120_000,
    });
  });

  it.each([
    [{}, 'option baseURL is required; option model is required'],
    [{ ...BASE, baseURL: 'ftp://host/v1' }, 'option baseURL must be an http(s) URL'],
    [{ ...BASE, model: '' }, 'option model must name the model'],
    [{ ...BASE, temprature: 0.5 }, 'unknown option "temprature"'],
    [{ ...BASE, temperature: 3 }, 'option temperature must be between 0 and 2'],
    [{ ...BASE, maxTokens: 0 }, 'option maxTokens must be greater than 0'],
    [{ ...BASE, stream: 'yes' }, 'option stream'],
    [{ ...BASE, maxTokensField: 'tokens' }, 'option maxTokensField'],
    [{ ...BASE, apiKeyEnv: 'NOT A NAME' }, 'option apiKeyEnv must be an environment variable name'],
    [{ ...BASE, apiKeyEnv: 'K', apiKeyFile: '/k' }, 'options apiKeyEnv and apiKeyFile are both set'],
  ])('%j is refused in one line naming the option', (raw, expected) => {
    let message = '';
    try {
      parseOpenAIOptions(raw);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(expected);
    expect(message.startsWith('openai adapter: ')).toBe(true);
    expect(message).not.toContain('\n');
  });
});

describe('the API key source', () => {
  it('reads the default variable; unset means no key (no Authorization header)', () => {
    expect(resolveApiKey({}, { OPENAI_API_KEY: ' sk-abc123 ' }).apiKey).toBe('sk-abc123');
    const none = resolveApiKey({}, {});
    expect(none.apiKey).toBeUndefined();
    expect(none.hint).toContain('OPENAI_API_KEY is not set');
  });

  it('a variable named by apiKeyEnv must be set; its name (never its value) is in the hint', () => {
    const source = resolveApiKey({ apiKeyEnv: 'MY_KEY' }, { MY_KEY: 'sk-secret-value' });
    expect(source.apiKey).toBe('sk-secret-value');
    expect(source.hint).toBe('Check the API key in the environment variable MY_KEY.');
    expect(source.redact('server said: bad key sk-secret-value')).toBe('server said: bad key [redacted]');
    expect(() => resolveApiKey({ apiKeyEnv: 'MY_KEY' }, {})).toThrow('option apiKeyEnv names the environment variable MY_KEY, which is not set');
  });

  it('a key file is read for every request (a rotated key needs no restart); a missing or empty one fails the load', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openai-key-'));
    try {
      const file = join(dir, 'key');
      await writeFile(file, 'sk-one\n');
      const source = resolveApiKey({ apiKeyFile: file }, {});
      expect(typeof source.apiKey).toBe('function');
      expect(await (source.apiKey as () => Promise<string>)()).toBe('sk-one');
      await writeFile(file, 'sk-two\n');
      expect(await (source.apiKey as () => Promise<string>)()).toBe('sk-two');
      expect(source.redact('x sk-two y')).toBe('x [redacted] y');
      expect(() => resolveApiKey({ apiKeyFile: join(dir, 'absent') }, {})).toThrow(/option apiKeyFile names .*absent, which cannot be read \(ENOENT\)/);
      await writeFile(file, '  \n');
      expect(() => resolveApiKey({ apiKeyFile: file }, {})).toThrow('is empty');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('loading the adapter by id', () => {
  it('loadAdapter("openai") builds it with the chat skill naming the model', async () => {
    const adapter = await loadAdapter('openai', BASE, ROOT);
    expect(adapter.name).toBe('openai');
    expect(adapter.skills.map((s) => [s.id, s.name])).toEqual([['chat', 'Chat with llama3']]);
    expect(JSON.stringify(adapter.skills)).not.toContain('11434');
  });

  it('a bad option stops `a2a-gateway start` with one line naming it', async () => {
    const prefix = uniquePrefix('openai-opts');
    const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        A2A_REDIS_URL: REDIS_URL,
        A2A_KEY_PREFIX: prefix,
        A2A_PORT: '0',
        A2A_LOG_LEVEL: 'silent',
        A2A_ADAPTER: 'openai',
        A2A_ADAPTER_OPTIONS: JSON.stringify({ ...BASE, temperature: 9 }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      'a2a-gateway: could not load adapter "openai": openai adapter: option temperature must be between 0 and 2 (see docs/openai-adapter.md)',
    ]);
  }, 60_000);
});
