// Builds the outbound credentials the options name (one kind per downstream agent).
import type { CredentialOptions } from '../options.ts';
import { BearerCredentials } from './bearer.ts';
import { ClientCredentialsToken } from './oauth2-client-credentials.ts';
import { secretOf } from './secret.ts';
import { SignatureCredentials } from './signature.ts';
import type { OutboundCredentials } from './types.ts';

export type { OutboundCredentials, OutgoingRequest } from './types.ts';
export { isLoopbackHttp } from './oauth2-client-credentials.ts';

export interface CredentialsEnvironment {
  requestTimeoutMs: number;
  /** The fetch a token endpoint is called with (the adapter's: bounded, bounded-response.ts). */
  fetch?: typeof fetch;
}

export function createCredentials(options: CredentialOptions | undefined, environment: CredentialsEnvironment): OutboundCredentials | undefined {
  if (options === undefined) return undefined;
  switch (options.type) {
    case 'bearer':
      return new BearerCredentials(secretOf(options, 'token', 'credentials'));
    case 'oauth2-client-credentials':
      return new ClientCredentialsToken({
        tokenUrl: options.tokenUrl,
        clientId: options.clientId,
        clientSecret: secretOf(options, 'clientSecret', 'credentials'),
        scope: options.scope,
        audience: options.audience,
        clientAuth: options.clientAuth,
        requestTimeoutMs: environment.requestTimeoutMs,
        fetch: environment.fetch,
      });
    case 'signature': {
      const secret = secretOf(options, 'privateKey', 'credentials');
      return new SignatureCredentials(options.keyId, secret, options.privateKeyEnv !== undefined ? 'credentials.privateKeyEnv' : 'credentials.privateKeyFile');
    }
  }
}
