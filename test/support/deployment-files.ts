// The shipped deployment files, read the way the tools that run them read them: the Dockerfile's
// ENV, ENTRYPOINT and CMD, compose.yaml's services, the Kubernetes manifests.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ROOT } from './harness.ts';

export interface DockerImage {
  /** Every stage's base image, in order; the last one is what runs. */
  stages: { from: string; name: string | undefined }[];
  /** The HEALTHCHECK's command (exec form), or undefined when there is none. */
  healthcheck: string[] | undefined;
  /** Paths the runtime stage copies from an earlier stage (COPY --from=…), as source → destination. */
  copiedFromStages: { stage: string; source: string; destination: string }[];
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  /** Top-level paths the runtime stage copies from the repository. */
  copied: string[];
  /** The runtime stage's RUN commands. */
  runCommands: string[];
  user: string | undefined;
  /** The runtime stage's base image. */
  from: string;
}

/** Instructions with their continuation lines joined, comments dropped. */
function instructions(text: string): { name: string; args: string }[] {
  const joined = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const [name = '', ...rest] = line.split(/\s+/);
      return { name: name.toUpperCase(), args: rest.join(' ') };
    });
}

export function readDockerfile(): DockerImage {
  const image: DockerImage = { stages: [], healthcheck: undefined, copiedFromStages: [], env: {}, entrypoint: [], cmd: [], copied: [], runCommands: [], user: undefined, from: '' };
  for (const { name, args } of instructions(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))) {
    if (name === 'FROM') {
      const [base = '', , stage] = args.split(/\s+/);
      image.stages.push({ from: base, name: stage });
      // What follows describes the stage that runs: only the last stage's instructions are kept.
      Object.assign(image, { from: base, env: {}, copied: [], copiedFromStages: [], runCommands: [], user: undefined });
    }
    if (name === 'ENV') for (const [, key, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S+)/g)) image.env[key as string] = value as string;
    if (name === 'ENTRYPOINT') image.entrypoint = JSON.parse(args) as string[];
    if (name === 'CMD') image.cmd = JSON.parse(args) as string[];
    if (name === 'HEALTHCHECK') image.healthcheck = JSON.parse(args.slice(args.indexOf('CMD ') + 4)) as string[];
    if (name === 'COPY') {
      const [first = '', ...rest] = args.split(/\s+/);
      const fromStage = /^--from=(.+)$/.exec(first);
      if (fromStage !== null) image.copiedFromStages.push({ stage: fromStage[1] as string, source: rest[0] as string, destination: rest[1] as string });
      else image.copied.push(...[first, ...rest].slice(0, -1));
    }
    if (name === 'RUN') image.runCommands.push(args);
    if (name === 'USER') image.user = args;
  }
  return image;
}

export interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
}

export function readCompose(): { services: Record<string, ComposeService>; volumes: Record<string, unknown> } {
  // Compose files use YAML merge keys (<<) for shared environments.
  return parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
}

export const KUBERNETES_DIR = join(ROOT, 'deploy', 'kubernetes');

export interface Manifest {
  file: string;
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export function readKubernetesManifests(): Manifest[] {
  const manifests: Manifest[] = [];
  for (const file of readdirSync(KUBERNETES_DIR).filter((name) => name.endsWith('.yaml'))) {
    for (const document of parseAllDocuments(readFileSync(join(KUBERNETES_DIR, file), 'utf8'))) {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map((error) => error.message).join('; ')}`);
      const value = document.toJS() as Manifest | null;
      if (value !== null) manifests.push({ ...value, file });
    }
  }
  return manifests;
}

/** "30s", "1m30s", "500ms" as milliseconds (Compose durations). */
export function composeDurationMs(text: string): number {
  const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(amount) * (units[unit as string] ?? Number.NaN);
  return total;
}
