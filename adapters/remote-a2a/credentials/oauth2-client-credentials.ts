// OAuth 2.0 client-credentials grant (RFC 6749 4.4) through oauth4webapi: one access token is
// cached and shared by every turn, fetched again shortly before it expires, and at once when the
// downstream answers 401 (revoked, rotated keys). Concurrent turns share one token request.
import * as oauth from 'oauth4webapi';
import { backendLimitOf, DownstreamAuthError, DownstreamUnavailableError, RETRYABLE_STATUSES } from '../errors.ts';
import type { Secret } from './secret.ts';
import type { OutboundCredentials, OutgoingRequest } from './types.ts';

export interface ClientCredentialsSettings {
  tokenUrl: string;
  clientId: string;
  clientSecret: Secret;
  scope: string | undefined;
  audience: string | undefined;
  clientAuth: 'basic' | 'post';
  requestTimeoutMs: number;
  /** The fetch the token endpoint is called with (default: the global one). */
  fetch?: typeof fetch;
}

/** Without expires_in, a token is trusted this long. */
const DEFAULT_LIFETIME_MS = 300_000;

interface CachedToken {
  value: string;
  /** When to fetch the next one: before the real expiry, so a request in flight does not carry a dead token. */
  refreshAtMs: number;
}

/** Plain http is allowed only to a loopback address (a local test or sidecar); secrets never cross a network unencrypted. */
export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

export class ClientCredentialsToken implements OutboundCredentials {
  private token: CachedToken | undefined;
  private pending: Promise<CachedToken> | undefined;
  private readonly server: oauth.AuthorizationServer;
  private readonly client: oauth.Client;

  constructor(private readonly settings: ClientCredentialsSettings) {
    const url = new URL(settings.tokenUrl);
    this.server = { issuer: url.origin, token_endpoint: url.href };
    this.client = { client_id: settings.clientId };
  }

  async apply(request: OutgoingRequest): Promise<void> {
    request.headers.set('authorization', `Bearer ${(await this.current()).value}`);
  }

  async renew(): Promise<boolean> {
    this.token = undefined;
    this.settings.clientSecret.reload();
    return true;
  }

  private current(): Promise<CachedToken> {
    if (this.token !== undefined && Date.now() < this.token.refreshAtMs) return Promise.resolve(this.token);
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchToken(): Promise<CachedToken> {
    const { settings } = this;
    const secret = settings.clientSecret.current();
    const clientAuth = settings.clientAuth === 'post' ? oauth.ClientSecretPost(secret) : oauth.ClientSecretBasic(secret);
    const parameters = new URLSearchParams();
    if (settings.scope !== undefined) parameters.set('scope', settings.scope);
    if (settings.audience !== undefined) parameters.set('audience', settings.audience);
    let result: oauth.TokenEndpointResponse;
    try {
      const response = await oauth.clientCredentialsGrantRequest(this.server, this.client, clientAuth, parameters, {
        signal: AbortSignal.timeout(settings.requestTimeoutMs),
        [oauth.allowInsecureRequests]: isLoopbackHttp(new URL(settings.tokenUrl)),
        ...(settings.fetch === undefined ? {} : { [oauth.customFetch]: settings.fetch }),
      });
      if (RETRYABLE_STATUSES.has(response.status)) {
        throw new DownstreamUnavailableError(`the token endpoint answered HTTP ${response.status}`, response.status);
      }
      result = await oauth.processClientCredentialsResponse(this.server, this.client, response);
    } catch (error) {
      // A token endpoint that sent past a backend limit: the turn fails naming the limit (errors.ts).
      if (error instanceof DownstreamUnavailableError) throw error;
      const limit = backendLimitOf(error);
      if (limit !== undefined) throw limit;
      if (error instanceof oauth.ResponseBodyError) {
        throw new DownstreamAuthError(`the token endpoint refused the client credentials of "${settings.clientId}": ${error.error}${error.error_description === undefined ? '' : ` (${error.error_description})`}`);
      }
      if (error instanceof TypeError || (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))) {
        throw new DownstreamUnavailableError(`the token endpoint is unreachable: ${error.message}`, undefined, { cause: error });
      }
      throw new DownstreamAuthError(`the token endpoint's answer is unusable: ${(error as Error).message}`);
    }
    const lifetimeMs = typeof result.expires_in === 'number' && result.expires_in > 0 ? result.expires_in * 1000 : DEFAULT_LIFETIME_MS;
    // Refresh when 80% of the lifetime has passed (at most a minute early).
    const refreshAtMs = Date.now() + lifetimeMs - Math.min(60_000, lifetimeMs * 0.2);
    this.token = { value: result.access_token, refreshAtMs };
    return this.token;
  }
}
