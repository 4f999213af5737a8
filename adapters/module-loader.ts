// Turns the adapter named in configuration into a live Adapter: a built-in one (the demo, an
// OpenAI-compatible model) or a user's ES module. User modules are checked here, at startup, so a wrong export fails with a
// message naming the file and the fix instead of surfacing later as a broken turn.
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { JsonObject } from '../src/protocol/types.ts';
import { createDemoAdapter, type DemoAdapterOptions } from './demo/index.ts';
import type { Adapter, AdapterEnvironment, AdapterFactory } from './types.ts';
import { DEFAULT_ADAPTER_ENVIRONMENT } from './bounded-response.ts';

const EXPORT_HINT =
  'Export `createAdapter(options, environment)` (named), or a default export that is such a factory or an ' +
  'adapter object, returning { name: string, version: string, skills: AgentSkill[], run(ctx) }.';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function demoOptions(options: JsonObject): DemoAdapterOptions {
  const { stepMs, ledgerFile } = options;
  const result: DemoAdapterOptions = {};
  if (stepMs !== undefined) {
    if (typeof stepMs !== 'number' || !Number.isFinite(stepMs) || stepMs < 0) {
      throw new Error(`demo adapter: option stepMs must be a non-negative number, got ${JSON.stringify(stepMs)}`);
    }
    result.stepMs = stepMs;
  }
  if (ledgerFile !== undefined) {
    if (typeof ledgerFile !== 'string' || ledgerFile === '') {
      throw new Error(`demo adapter: option ledgerFile must be a file path, got ${JSON.stringify(ledgerFile)}`);
    }
    result.ledgerFile = ledgerFile;
  }
  return result;
}

function modulePath(spec: string, baseDir: string): string {
  // file: URLs are accepted too, since that is how import.meta.url-based configs name files.
  if (spec.startsWith('file:')) return fileURLToPath(spec);
  return isAbsolute(spec) ? spec : resolve(baseDir, spec);
}

/** Names what is wrong with a would-be adapter, or returns an empty list when it is usable. */
function adapterProblems(value: unknown): string[] {
  if (!isRecord(value)) return [`it is ${value === null ? 'null' : typeof value}, not an object`];
  const problems: string[] = [];
  if (typeof value['name'] !== 'string' || value['name'] === '') problems.push('name (non-empty string)');
  if (typeof value['version'] !== 'string' || value['version'] === '') problems.push('version (non-empty string)');
  if (!Array.isArray(value['skills'])) problems.push('skills (array)');
  if (typeof value['run'] !== 'function') problems.push('run (function)');
  return problems.length === 0 ? [] : [`missing or invalid: ${problems.join(', ')}`];
}

function asAdapter(value: unknown, source: string): Adapter {
  const problems = adapterProblems(value);
  if (problems.length > 0) {
    throw new Error(`adapter module ${source} produced an unusable adapter (${problems.join('; ')}). ${EXPORT_HINT}`);
  }
  return value as Adapter;
}

/** Adapter modules written in TypeScript, which Node loads only through tsx. */
const TYPESCRIPT_MODULE = /\.[cm]?tsx?$/;
let typescriptLoader: Promise<void> | undefined;

/**
 * Registers tsx's loader, once, the first time a TypeScript adapter is configured: the compiled
 * gateway runs without it, so tsx (a dev dependency) is needed only by those who write adapters
 * in TypeScript and load them uncompiled.
 */
function loadTypeScriptSupport(file: string): Promise<void> {
  typescriptLoader ??= import('tsx/esm/api').then(
    ({ register }) => void register(),
    (error: unknown) => {
      typescriptLoader = undefined;
      throw new Error(
        `adapter module ${file} is TypeScript, and loading it needs tsx, which is not installed (${(error as Error).message}). ` +
          'Install it beside the gateway (npm install --save-exact tsx), or compile the adapter to JavaScript and configure the .js file.',
        { cause: error },
      );
    },
  );
  return typescriptLoader;
}

async function fromModule(file: string, options: JsonObject, environment: AdapterEnvironment): Promise<Adapter> {
  if (TYPESCRIPT_MODULE.test(file)) await loadTypeScriptSupport(file);
  let mod: unknown;
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`cannot load adapter module ${file}: ${reason}`, { cause: err });
  }
  if (!isRecord(mod)) throw new Error(`adapter module ${file} did not evaluate to a module namespace. ${EXPORT_HINT}`);

  const named = mod['createAdapter'];
  const fallback = mod['default'];
  if (named !== undefined && typeof named !== 'function') {
    throw new Error(`adapter module ${file} exports createAdapter, but it is a ${typeof named}, not a function. ${EXPORT_HINT}`);
  }
  if (typeof named === 'function') {
    return asAdapter(await (named as AdapterFactory)(options, environment), `${file} (createAdapter)`);
  }
  if (typeof fallback === 'function') {
    return asAdapter(await (fallback as AdapterFactory)(options, environment), `${file} (default export)`);
  }
  if (isRecord(fallback)) return asAdapter(fallback, `${file} (default export)`);
  const exported = Object.keys(mod);
  throw new Error(
    `adapter module ${file} has no createAdapter export and no usable default export ` +
      `(it exports: ${exported.length > 0 ? exported.join(', ') : 'nothing'}). ${EXPORT_HINT}`,
  );
}

/**
 * Loads the adapter named by `spec`: "demo" for the built-in demo agent, "openai" for an
 * OpenAI-compatible model, "a2a" for a remote A2A agent, otherwise a path to an ES module
 * (relative paths are resolved against `baseDir`, normally the config file's folder). `options`
 * is passed to the module's factory unchanged, with the `environment` (the agent's backend
 * limits); the built-in adapters check theirs here, so a bad option stops the start.
 */
export async function loadAdapter(spec: string, options: JsonObject, baseDir: string, environment: AdapterEnvironment = DEFAULT_ADAPTER_ENVIRONMENT): Promise<Adapter> {
  if (spec === 'demo') return createDemoAdapter(demoOptions(options));
  // Imported when named: every gateway and worker process would otherwise load the model and A2A clients.
  if (spec === 'openai') return (await import('./openai/index.ts')).createOpenAIAdapter(options, environment);
  if (spec === 'a2a') return (await import('./remote-a2a/index.ts')).createRemoteA2aAdapter(options, baseDir, environment);
  if (spec.trim() === '') throw new Error(`adapter spec is empty. Use "demo", "openai", "a2a" or a path to an ES module. ${EXPORT_HINT}`);
  return fromModule(modulePath(spec, baseDir), options, environment);
}
