// `a2a-gateway keys generate`: the keys it writes are the ones a gateway started with the printed
// configuration lines uses: the card is signed with the card key, the webhook key is published
// for receivers, and the partner's private key (JWK or PEM) signs requests the gateway accepts.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { base64url, decodeProtectedHeader, flattenedVerify, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCardSigningPayload } from '../agent-card/sign.ts';
import type { AgentCard } from '../src/protocol/types.ts';
import { publicJwkOf } from '../src/auth/keys/key-file.ts';
import { signRequest } from '../src/auth/signatures/sign-request.ts';
import { parseKeysArguments } from '../src/cli/keys.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { REDIS_URL, ROOT, uniquePrefix, waitFor } from './support/harness.ts';

const run = promisify(execFile);
let dir: string;
let printed = '';
let gateway: ChildProcess | undefined;
let gatewayUrl = '';

const keysCommand = (args: string[]) =>
  run(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'keys', 'generate', '--dir', join(dir, 'keys'), '--partner', 'acme', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 });

/** The printed configuration: its VAR=value lines, and the YAML block for the config file. */
function configurationOf(text: string): { env: Record<string, string>; yaml: string } {
  const env = Object.fromEntries([...text.matchAll(/^(A2A_[A-Z_]+)=(.+)$/gm)].map((match) => [match[1] as string, match[2] as string]));
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith('auth:'));
  const end = lines.findIndex((line, index) => index > start && line.startsWith('#'));
  return { env, yaml: lines.slice(start, end).join('\n') };
}

const readJson = (path: string): JWK => JSON.parse(readFileSync(path, 'utf8')) as JWK;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-keys-'));
  printed = (await keysCommand([])).stdout;
  const { env, yaml } = configurationOf(printed);
  writeFileSync(join(dir, 'gateway.yaml'), yaml);
  const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'start'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, A2A_CONFIG: join(dir, 'gateway.yaml'), A2A_REDIS_URL: REDIS_URL, A2A_PORT: '0', A2A_KEY_PREFIX: uniquePrefix('keys'), A2A_DATA_DIR: join(dir, 'data') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  gateway = child;
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  gatewayUrl = await waitFor(() => {
    if (child.exitCode !== null) throw new Error(`the gateway exited:\n${out}`);
    return /agent card: (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
  }, 60_000, 'the gateway to start with the generated keys');
}, 120_000);

afterAll(async () => {
  if (gateway !== undefined && gateway.exitCode === null) {
    const exited = new Promise((resolve) => gateway?.once('exit', resolve));
    gateway.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('a2a-gateway keys generate', () => {
  it('writes private key files readable by their owner only, and prints the lines that use them', () => {
    const { env, yaml } = configurationOf(printed);
    expect(Object.keys(env).sort()).toEqual(['A2A_CARD_SIGNING_KEY_FILE', 'A2A_PUSH_SIGNING_KEY_FILE']);
    for (const file of [env.A2A_CARD_SIGNING_KEY_FILE, env.A2A_PUSH_SIGNING_KEY_FILE, join(dir, 'keys', 'partner-acme.private.jwk.json'), join(dir, 'keys', 'partner-acme.private.pem')]) {
      expect(statSync(file as string).mode & 0o777, file).toBe(0o600);
    }
    expect(readJson(env.A2A_CARD_SIGNING_KEY_FILE as string)).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(readJson(env.A2A_PUSH_SIGNING_KEY_FILE as string)).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(yaml).toMatch(/^auth:\n {2}partners:\n {4}- id: acme\n/);
    expect(yaml).not.toContain('"d"');
    expect(yaml).not.toMatch(/\bd: /);
    expect(printed).toContain('kubectl create secret generic a2a-gateway-keys');
  });

  it('refuses to replace keys already there unless --force, and leaves them as they were', async () => {
    const cardFile = configurationOf(printed).env.A2A_CARD_SIGNING_KEY_FILE as string;
    const before = readFileSync(cardFile, 'utf8');
    const refused = await keysCommand([]).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr).toMatch(/already exists.*--force/);
    expect(readFileSync(cardFile, 'utf8')).toBe(before);
    expect(parseKeysArguments(['generate', '--partner', 'a b'])).toMatch(/--partner "a b": letters, digits/);
    expect(parseKeysArguments(['rotate'])).toBe('unknown subcommand "rotate"');
  });

  it('signs the agent card with the card key, and publishes it and the webhook key on the JWKS', async () => {
    const { env } = configurationOf(printed);
    const cardKey = readJson(env.A2A_CARD_SIGNING_KEY_FILE as string);
    const pushKey = readJson(env.A2A_PUSH_SIGNING_KEY_FILE as string);
    const card = (await (await fetch(`${gatewayUrl}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as { signatures?: { protected: string; signature: string }[] } & Record<string, unknown>;
    const { signatures, ...unsigned } = card;
    const [signature] = signatures ?? [];
    expect(signature, 'the card is signed').toBeDefined();
    expect(decodeProtectedHeader({ protected: signature?.protected ?? '' } as never).kid).toBe(cardKey.kid);
    // The payload as spec 8.4.1 makes it (defaults dropped, JCS), verified with the generated key's public half.
    await flattenedVerify(
      { protected: signature?.protected ?? '', signature: signature?.signature ?? '', payload: base64url.encode(agentCardSigningPayload(unsigned as unknown as AgentCard)) },
      await importJWK(publicJwkOf(cardKey), 'ES256'),
    );
    const jwks = (await (await fetch(`${gatewayUrl}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([cardKey.kid, pushKey.kid]));
    expect(jwks.keys.find((key) => key.kid === pushKey.kid)).toEqual(publicJwkOf(pushKey));
  });

  it('accepts requests the partner signs with its generated key, as JWK and as PEM', async () => {
    const keyId = /keyId: (\S+)/.exec(configurationOf(printed).yaml)?.[1] ?? '';
    const privateKeys = [readJson(join(dir, 'keys', 'partner-acme.private.jwk.json')) as JsonWebKey, createPrivateKey(readFileSync(join(dir, 'keys', 'partner-acme.private.pem')))];
    for (const [index, privateKey] of privateKeys.entries()) {
      const url = `${gatewayUrl}/a2a/jsonrpc`;
      const body = JSON.stringify({ jsonrpc: '2.0', id: index, method: 'SendMessage', params: { message: { messageId: `keys-${index}-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'signed hello' }] } } });
      const headers = await signRequest({ method: 'POST', url, headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body, keyId, privateKey, alg: 'ed25519' });
      const response = await fetch(url, { method: 'POST', headers, body });
      const answer = (await response.json()) as { result?: { task?: { status: { state: string } } }; error?: unknown };
      expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
      expect(answer.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
    }
  });
});
