import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { closestName } from '../validation/closest-name.ts';
import { fieldsOf, schemaAt } from '../validation/zod-shape.ts';
import { configSchema, ENV_KEYS, type GatewayConfig } from './schema.ts';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  config: GatewayConfig;
  /** Directory relative adapter paths are resolved against. */
  baseDir: string;
  /** What was ignored and is likely a typo (an A2A_* variable close to a known one): log each at WARN. */
  warnings: string[];
}

/** A2A_* variables read outside ENV_KEYS. */
const OTHER_ENV_NAMES = ['A2A_CONFIG', 'A2A_ADAPTER_OPTIONS', 'A2A_STAGE_MARKS_FILE', 'A2A_CHECK_SCRIPT_SLOTS'];
/** A misspelt variable is one or two edits away; farther ones (A2A_TEST_REDIS_URL) belong to something else. */
const VARIABLE_TYPO_EDITS = 2;

/** Set A2A_* variables that no setting reads but that are one typo away from one that does. */
function misspeltVariables(env: NodeJS.ProcessEnv): string[] {
  const known = [...Object.keys(ENV_KEYS), ...OTHER_ENV_NAMES];
  const warnings: string[] = [];
  for (const name of Object.keys(env)) {
    if (!name.startsWith('A2A_') || known.includes(name)) continue;
    // Only likely typos: other A2A_ variables may belong to tools and tests around the gateway.
    const suggestion = closestName(name, known, VARIABLE_TYPO_EDITS);
    if (suggestion !== undefined) warnings.push(`unknown variable ${name} is ignored; did you mean ${suggestion}?`);
  }
  return warnings;
}

/** "unknown key 'x' in <where>; did you mean 'y'?" for each key of an unrecognized_keys issue. */
function unknownKeyProblems(issue: z.core.$ZodIssue, file: string | undefined): string[] {
  const keys = (issue as { keys?: string[] }).keys ?? [];
  const path = issue.path.join('.');
  const at = schemaAt(configSchema, issue.path);
  const valid = Object.keys((at === undefined ? undefined : fieldsOf(at)) ?? {});
  const where = path === '' ? (file ?? 'the configuration') : `${path}${file === undefined ? '' : ` (${file})`}`;
  return keys.map((key) => {
    const suggestion = closestName(key, valid);
    if (suggestion !== undefined) return `unknown key '${key}' in ${where}; did you mean '${suggestion}'?`;
    return `unknown key '${key}' in ${where}${valid.length > 0 && valid.length <= 12 ? `; valid keys: ${valid.join(', ')}` : '; see docs/configuration.md for the settings'}`;
  });
}

/**
 * Reads the optional config file (A2A_CONFIG, JSON or YAML), overlays A2A_* environment
 * variables and validates the result. Any bad value is one ConfigError naming the setting.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<GatewayConfig> = {}): LoadedConfig {
  const raw: Record<string, unknown> = {};
  let baseDir = process.cwd();
  const file = env.A2A_CONFIG;
  if (file !== undefined && file !== '') {
    const path = resolve(file);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new ConfigError(`A2A_CONFIG names ${path}, which cannot be read (${(error as Error).message}).`);
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(text); // YAML is a superset of JSON, so one parser reads both.
    } catch (error) {
      throw new ConfigError(`Config file ${path} is not valid JSON or YAML: ${(error as Error).message}`);
    }
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(raw, parsed);
    else if (parsed !== null) throw new ConfigError(`Config file ${path} must hold an object of settings.`);
    baseDir = dirname(path);
  }
  // Which variable set each key, so an error names the one the user actually set.
  const envNames = new Map(Object.entries(ENV_KEYS).map(([name, path]) => [path, name]));
  for (const [name, path] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(raw, path, value);
  }
  // Platforms (Heroku, Cloud Run, Render, …) say where to listen in PORT.
  if ((env.A2A_PORT ?? '') === '' && env.PORT !== undefined && env.PORT !== '') {
    setPath(raw, 'port', env.PORT);
    envNames.set('port', 'PORT');
  }
  if (env.NODE_ENV === 'production' && (env.A2A_PRODUCTION ?? '') === '' && raw.production === undefined) {
    raw.production = true;
    envNames.set('production', 'NODE_ENV=production');
  }
  if (env.A2A_ADAPTER_OPTIONS !== undefined && env.A2A_ADAPTER_OPTIONS !== '') {
    try {
      raw.adapterOptions = JSON.parse(env.A2A_ADAPTER_OPTIONS);
    } catch {
      throw new ConfigError('A2A_ADAPTER_OPTIONS must be a JSON object, e.g. {"stepMs":200}.');
    }
  }
  Object.assign(raw, overrides);
  const result = configSchema.strict().safeParse(raw);
  if (!result.success) {
    const problems = result.error.issues.flatMap((issue) => {
      if (issue.code === 'unrecognized_keys') return unknownKeyProblems(issue, file === undefined || file === '' ? undefined : file);
      const key = issue.path.join('.') || '(root)';
      const envName = envNames.get(key);
      return `${key}${envName ? ` (${envName})` : ''}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  return { config: result.data, baseDir, warnings: misspeltVariables(env) };
}

/** Sets a dotted path ("auth.enabled"), keeping what the config file put beside it. */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    node[part] = next !== null && typeof next === 'object' && !Array.isArray(next) ? { ...(next as Record<string, unknown>) } : {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1] as string] = value;
}

export function publicUrlOf(config: GatewayConfig, boundPort?: number): string {
  if (config.publicUrl !== undefined) return config.publicUrl.replace(/\/+$/, '');
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host}:${boundPort ?? config.port}`;
}
