// `a2a-gateway admin …`: the control plane's admin API (docs/admin-api.md) from a terminal,
// over HTTP to a running gateway, so it works from anywhere the gateway is reachable and every
// change is authorized and audited like any other. Answers are printed as JSON.
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { isResourceKind, RESOURCE_KINDS } from '../control/resource-kinds.ts';
import { carryOut, describeChange, exportResources, planApply, type ResourceDocument } from './admin-apply.ts';
import { AdminRequestError, adminRequest, type AdminTarget } from './admin-client.ts';

export const ADMIN_USAGE = `usage: a2a-gateway admin <command> [options]

  admin <kind> list                       kinds: ${RESOURCE_KINDS.join(', ')}
  admin <kind> get <name>
  admin <kind> put <name> --file <path|->  [--if-match <version>]
  admin api-keys create --file <path|->   (the key is printed once)
  admin <kind> delete <name> [--if-match <version>]
  admin audit [--page-size <n>] [--page-token <t>]
  admin export                            every stored resource as one JSON document
  admin apply --file <path|-> [--dry-run] [--prune]
                                          makes the stored resources what the document says

  --url <base URL>     the gateway (A2A_ADMIN_URL; default http://127.0.0.1:<A2A_PORT or 8080>)
  --token <jwt>        a bearer token with a2a:admin (A2A_ADMIN_TOKEN)
  --api-key <key>      or an API key with a2a:admin (A2A_ADMIN_API_KEY)
  --timeout-ms <ms>    longest one request may take (default 10000)
  Files are JSON or YAML, at most 1 MiB.`;

const MAX_FILE_BYTES = 1024 * 1024;
const VALUE_FLAGS = new Set(['--url', '--token', '--api-key', '--timeout-ms', '--file', '--if-match', '--page-size', '--page-token']);
const SWITCHES = new Set(['--dry-run', '--prune']);

interface ParsedArgs {
  words: string[];
  flags: Map<string, string>;
  switches: Set<string>;
}

function parseArgs(args: readonly string[]): ParsedArgs | string {
  const parsed: ParsedArgs = { words: [], flags: new Map(), switches: new Set() };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (SWITCHES.has(arg)) parsed.switches.add(arg);
    else if (VALUE_FLAGS.has(arg)) {
      const value = args[i + 1];
      if (value === undefined) return `${arg} needs a value`;
      parsed.flags.set(arg, value);
      i += 1;
    } else if (arg.startsWith('--')) return `unknown option ${arg}`;
    else parsed.words.push(arg);
  }
  return parsed;
}

function targetOf(parsed: ParsedArgs, env: NodeJS.ProcessEnv): AdminTarget {
  const token = parsed.flags.get('--token') ?? env.A2A_ADMIN_TOKEN;
  const apiKey = parsed.flags.get('--api-key') ?? env.A2A_ADMIN_API_KEY;
  const timeoutMs = Number(parsed.flags.get('--timeout-ms') ?? 10_000);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000) throw new Error('--timeout-ms must be a whole number of milliseconds, 1 to 600000');
  return {
    baseUrl: parsed.flags.get('--url') ?? env.A2A_ADMIN_URL ?? `http://127.0.0.1:${env.A2A_PORT ?? '8080'}`,
    credentials: token !== undefined && token !== '' ? { token } : apiKey !== undefined && apiKey !== '' ? { apiKey } : undefined,
    timeoutMs,
  };
}

async function readDocument(path: string | undefined): Promise<unknown> {
  if (path === undefined) throw new Error('this command needs --file <path> (or --file - for standard input)');
  let text: string;
  if (path === '-') {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of process.stdin) {
      size += (chunk as Buffer).length;
      if (size > MAX_FILE_BYTES) throw new Error(`standard input holds more than ${MAX_FILE_BYTES} bytes`);
      chunks.push(chunk as Buffer);
    }
    text = Buffer.concat(chunks).toString('utf8');
  } else {
    const bytes = await readFile(path);
    if (bytes.length > MAX_FILE_BYTES) throw new Error(`${path} holds more than ${MAX_FILE_BYTES} bytes`);
    text = bytes.toString('utf8');
  }
  try {
    return parseYaml(text) as unknown;
  } catch (error) {
    throw new Error(`${path === '-' ? 'standard input' : path} is neither JSON nor YAML: ${(error as Error).message}`);
  }
}

function versionHeader(parsed: ParsedArgs): Record<string, string> {
  const version = parsed.flags.get('--if-match');
  if (version === undefined) return {};
  if (!/^\d{1,15}$/.test(version)) throw new Error('--if-match takes the version a get showed, e.g. --if-match 3');
  return { 'If-Match': `"${version}"` };
}

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
};

async function runResourceCommand(kind: string, parsed: ParsedArgs, target: AdminTarget): Promise<void> {
  const [, verb, name] = parsed.words;
  const path = (n: string): string => `/${kind}/${encodeURIComponent(n)}`;
  if (verb === 'list') {
    const query = parsed.flags.has('--page-token') ? `?pageToken=${encodeURIComponent(parsed.flags.get('--page-token') as string)}` : '';
    print((await adminRequest(target, 'GET', `/${kind}${query}`)).body);
  } else if (verb === 'create' && kind === 'api-keys') {
    print((await adminRequest(target, 'POST', `/${kind}`, { body: await readDocument(parsed.flags.get('--file')) })).body);
  } else if (name === undefined) {
    throw new Error(`admin ${kind} ${verb ?? ''} needs a resource name`);
  } else if (verb === 'get') {
    print((await adminRequest(target, 'GET', path(name))).body);
  } else if (verb === 'put') {
    print((await adminRequest(target, 'PUT', path(name), { body: await readDocument(parsed.flags.get('--file')), headers: versionHeader(parsed) })).body);
  } else if (verb === 'delete') {
    await adminRequest(target, 'DELETE', path(name), { headers: versionHeader(parsed) });
    process.stdout.write(`deleted ${kind}/${name}\n`);
  } else {
    throw new Error(`unknown admin ${kind} command "${verb ?? ''}"`);
  }
}

async function runApply(parsed: ParsedArgs, target: AdminTarget): Promise<void> {
  const document = await readDocument(parsed.flags.get('--file'));
  if (document === null || typeof document !== 'object' || Array.isArray(document)) throw new Error(`the document must be an object with lists under ${RESOURCE_KINDS.join(', ')}`);
  const unknown = Object.keys(document).filter((kind) => !isResourceKind(kind));
  if (unknown.length > 0) throw new Error(`the document names unknown kinds ${unknown.join(', ')}; kinds are ${RESOURCE_KINDS.join(', ')}`);
  const plan = await planApply(target, document as ResourceDocument, parsed.switches.has('--prune'));
  for (const change of plan) process.stdout.write(`${describeChange(change)}\n`);
  if (parsed.switches.has('--dry-run')) {
    process.stdout.write('dry run: nothing was changed\n');
    return;
  }
  for (const made of await carryOut(target, plan)) process.stdout.write(`api key ${made.name}: ${made.key} (shown once; store it now)\n`);
}

/** Runs `admin …`; resolves with the exit code. */
export async function runAdminCommand(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseArgs(args);
  if (typeof parsed === 'string' || parsed.words.length === 0) {
    process.stderr.write(`a2a-gateway admin: ${typeof parsed === 'string' ? parsed : 'which command?'}\n${ADMIN_USAGE}\n`);
    return 2;
  }
  try {
    const target = targetOf(parsed, env);
    const [command] = parsed.words as [string];
    if (command === 'audit') {
      const size = parsed.flags.get('--page-size');
      const token = parsed.flags.get('--page-token');
      const query = new URLSearchParams({ ...(size === undefined ? {} : { pageSize: size }), ...(token === undefined ? {} : { pageToken: token }) }).toString();
      print((await adminRequest(target, 'GET', `/audit${query === '' ? '' : `?${query}`}`)).body);
    } else if (command === 'export') print(await exportResources(target));
    else if (command === 'apply') await runApply(parsed, target);
    else if (isResourceKind(command)) await runResourceCommand(command, parsed, target);
    else throw new Error(`unknown admin command "${command}"\n${ADMIN_USAGE}`);
    return 0;
  } catch (error) {
    process.stderr.write(`a2a-gateway admin: ${(error as Error).message}\n`);
    return error instanceof AdminRequestError && error.status === 412 ? 3 : 1;
  }
}
