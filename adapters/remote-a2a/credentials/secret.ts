// A secret named by the options: an environment variable or a file. Read at load time (a missing
// one stops the start, naming the option, never printing a value) and again on demand, so a
// rotated file is picked up without a restart.
import { readFileSync } from 'node:fs';
import { RemoteA2aOptionsError } from '../options.ts';

export class Secret {
  private value: string;

  /** `option` names the setting in errors, e.g. "credentials.tokenEnv". */
  constructor(
    private readonly source: { env: string } | { file: string },
    private readonly option: string,
  ) {
    this.value = this.read();
  }

  current(): string {
    return this.value;
  }

  /** Reads the source again; true when the secret changed. */
  reload(): boolean {
    let next: string;
    try {
      next = this.read();
    } catch {
      return false;
    }
    const changed = next !== this.value;
    this.value = next;
    return changed;
  }

  private read(): string {
    let raw: string | undefined;
    if ('env' in this.source) {
      raw = process.env[this.source.env];
      if (raw === undefined || raw.trim() === '') throw new RemoteA2aOptionsError(`a2a adapter: option ${this.option}: the environment variable ${this.source.env} is not set`);
    } else {
      try {
        raw = readFileSync(this.source.file, 'utf8');
      } catch (error) {
        throw new RemoteA2aOptionsError(`a2a adapter: option ${this.option}: cannot read ${this.source.file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      if (raw.trim() === '') throw new RemoteA2aOptionsError(`a2a adapter: option ${this.option}: ${this.source.file} is empty`);
    }
    return raw.trim();
  }
}

/** The secret `<name>Env` / `<name>File` of an options object names. */
export function secretOf(options: Record<string, unknown>, name: string, prefix: string): Secret {
  const env = options[`${name}Env`];
  if (typeof env === 'string') return new Secret({ env }, `${prefix}.${name}Env`);
  return new Secret({ file: options[`${name}File`] as string }, `${prefix}.${name}File`);
}
