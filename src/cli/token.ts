// `npm run token -- --sub alice`: mints a token from the development issuer, for trying the
// gateway locally. Only the token goes to stdout, so TOKEN=$(npm run -s token -- --sub alice)
// works; everything else is one line on stderr.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadDevIssuer } from '../auth/dev-issuer.ts';
import { loadConfig } from '../config/load.ts';
import { isGrantableScope } from '../config/schema.ts';
import { SCOPES } from '../protocol/scopes.ts';

const USAGE = 'usage: npm run token -- --sub <subject> [--tenant <tenant>] [--scope "a2a:read a2a:write"] [--ttl <seconds>]';

class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

const usageError = (problem: string): ExitError => new ExitError(`a2a-gateway token: ${problem}. ${USAGE}`, 2);

interface TokenRequest {
  sub: string;
  tenant: string | undefined;
  scopes: string[] | undefined;
  ttlSeconds: number | undefined;
}

function parseRequest(argv: string[]): TokenRequest | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        sub: { type: 'string' },
        tenant: { type: 'string' },
        scope: { type: 'string' },
        ttl: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    // parseArgs messages can span lines (they suggest "--" for dashed values); keep the first.
    throw usageError((error as Error).message.split('\n')[0]?.replace(/\.$/, '') ?? 'bad arguments');
  }
  if (values.help === true) return 'help';
  if (values.sub === undefined || values.sub.trim() === '') throw usageError('--sub is required');

  let scopes: string[] | undefined;
  if (values.scope !== undefined) {
    const requested = values.scope.split(/[\s,]+/).filter((s) => s !== '');
    const unknown = requested.filter((s) => !isGrantableScope(s));
    if (unknown.length > 0) {
      throw new ExitError(
        `a2a-gateway token: unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; valid scopes are ${SCOPES.join(', ')}, or scopes of your own (agent access) not starting with "a2a:".`,
        2,
      );
    }
    if (requested.length === 0) throw usageError(`--scope names no scope; valid scopes are ${SCOPES.join(', ')}`);
    scopes = requested;
  }

  let ttlSeconds: number | undefined;
  if (values.ttl !== undefined) {
    ttlSeconds = /^\d+$/.test(values.ttl) ? Number(values.ttl) : Number.NaN;
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) throw usageError(`--ttl must be a positive number of seconds, not "${values.ttl}"`);
  }
  return { sub: values.sub, tenant: values.tenant, scopes, ttlSeconds };
}

async function main(argv: string[]): Promise<string> {
  const request = parseRequest(argv);
  if (request === 'help') return `${USAGE}\n`;

  let config;
  try {
    ({ config } = loadConfig());
  } catch (error) {
    throw new ExitError(`a2a-gateway token: ${(error as Error).message}`, 1);
  }
  const { issuers } = config.auth;
  if (issuers.length > 0) {
    // A development key the gateway no longer trusts would only produce tokens that fail later.
    throw new ExitError(
      `a2a-gateway token: this command only mints development tokens, but the configuration trusts ${issuers.length === 1 ? 'the issuer' : 'the issuers'} ${issuers.map((i) => `"${i.id}"`).join(', ')}; get tokens from your issuer.`,
      1,
    );
  }
  if (!config.auth.enabled) {
    process.stderr.write('a2a-gateway token: note: authentication is disabled (auth.enabled / A2A_AUTH_ENABLED), so the gateway ignores this token.\n');
  }

  try {
    const issuer = await loadDevIssuer(resolve(process.cwd(), config.dataDir));
    const token = await issuer.mint({
      sub: request.sub,
      ...(request.tenant !== undefined ? { tenant: request.tenant } : {}),
      ...(request.scopes !== undefined ? { scopes: request.scopes } : {}),
      ...(request.ttlSeconds !== undefined ? { ttlSeconds: request.ttlSeconds } : {}),
    });
    return `${token}\n`;
  } catch (error) {
    throw new ExitError(`a2a-gateway token: ${(error as Error).message}`, 1);
  }
}

main(process.argv.slice(2)).then(
  (output) => {
    process.stdout.write(output);
  },
  (error: unknown) => {
    if (error instanceof ExitError) {
      process.stderr.write(`${error.message}\n`);
      process.exitCode = error.code;
    } else {
      process.stderr.write(`a2a-gateway token: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
