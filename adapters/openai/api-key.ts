// Where the model server's API key comes from. The key itself is never part of the options, the
// card, a log line or a stored message: options name an environment variable or a file, and
// error messages name that source (and have any occurrence of the key masked).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { DEFAULT_API_KEY_ENV, type OpenAIAdapterOptions } from './options.ts';

export interface ApiKeySource {
  /** What the client sends: a key, a function reading the key file, or nothing (no Authorization header). */
  readonly apiKey: string | (() => Promise<string>) | undefined;
  /** Where the key comes from, for error messages ("the environment variable OPENAI_API_KEY"). */
  readonly origin: string;
  /** What to say when the server refuses the credentials (401/403). */
  readonly hint: string;
  /** Masks every occurrence of the key (the one last read) in a text meant for people. */
  redact(text: string): string;
}

function masked(text: string, key: string | undefined): string {
  return key === undefined || key.length < 4 ? text : text.split(key).join('[redacted]');
}

/** Resolves the key's source at load time; throws naming the option when it cannot be used. */
export function resolveApiKey(options: Pick<OpenAIAdapterOptions, 'apiKeyEnv' | 'apiKeyFile'>, env: NodeJS.ProcessEnv = process.env): ApiKeySource {
  const { apiKeyFile, apiKeyEnv } = options;
  if (apiKeyFile !== undefined) {
    let last: string | undefined;
    const read = (text: string): string => {
      const key = text.trim();
      if (key === '') throw new Error(`openai adapter: the API key file named by option apiKeyFile (${apiKeyFile}) is empty`);
      last = key;
      return key;
    };
    try {
      read(readFileSync(apiKeyFile, 'utf8'));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === undefined) throw error;
      throw new Error(`openai adapter: option apiKeyFile names ${apiKeyFile}, which cannot be read (${code})`);
    }
    const origin = `the file ${apiKeyFile} (option apiKeyFile)`;
    return {
      // Read for every request: a key rotated in the file (a mounted secret) needs no restart.
      apiKey: async () => read(await readFile(apiKeyFile, 'utf8')),
      origin,
      hint: `Check the API key in ${origin}.`,
      redact: (text) => masked(text, last),
    };
  }
  const name = apiKeyEnv ?? DEFAULT_API_KEY_ENV;
  const value = env[name];
  const key = value === undefined || value.trim() === '' ? undefined : value.trim();
  if (key === undefined && apiKeyEnv !== undefined) {
    throw new Error(`openai adapter: option apiKeyEnv names the environment variable ${apiKeyEnv}, which is not set`);
  }
  const origin = `the environment variable ${name}`;
  return {
    apiKey: key,
    origin,
    hint:
      key === undefined
        ? `No API key was sent: ${name} is not set. Set it (or name another variable with option apiKeyEnv, or a file with apiKeyFile).`
        : `Check the API key in ${origin}.`,
    redact: (text) => masked(text, key),
  };
}
