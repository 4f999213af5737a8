// Where one issuer's keys come from, by how it is configured: inline `jwks`, a `jwksFile`, a
// remote `jwksUri`, or, with none of them, discovery from the issuer URL. Each gives jwtVerify
// its key lookup, says its state for /readyz, and stops whatever it runs in the background.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { IssuerConfig } from '../../config/schema.ts';
import type { Logger } from '../../logging/logger.ts';
import type { FetchBounds, FetchFunction } from './bounded-fetch.ts';
import { IssuerNotDiscovered } from './issuer-errors.ts';
import { IssuerDiscovery, type DiscoveryStatus } from './issuer-discovery.ts';
import type { KeyFetchFailures } from './key-fetch-failures.ts';
import { RemoteKeys, type KeyFetchStatus } from './remote-keys.ts';

/** One issuer as /readyz shows it to an admin. */
export interface IssuerStatus {
  id: string;
  issuer: string;
  /** Where its keys come from. */
  keys: 'discovery' | 'jwksUri' | 'jwks' | 'jwksFile';
  /** failing when its discovery or its JWKS fetch is; pending until the first of them settled; ok otherwise. */
  state: 'ok' | 'pending' | 'failing';
  discovery?: DiscoveryStatus;
  jwks?: KeyFetchStatus;
}

export interface IssuerKeys {
  readonly getKey: JWTVerifyGetKey;
  status(): IssuerStatus;
  /** Starts what runs in the background (discovery); called once the issuer is in use. */
  start(): void;
  /** Stops it; the issuer is no longer trusted. */
  close(): void;
}

/** What every issuer's keys are built with (from the auth settings). */
export interface IssuerKeyContext {
  /** Directory jwksFile paths are relative to. */
  baseDir: string;
  jwksCacheMs: number;
  jwksCooldownMs: number;
  retryMinMs: number;
  retryMaxMs: number;
  discoveryRefreshMs: number;
  bounds: FetchBounds;
  failures: KeyFetchFailures;
  logger?: Logger;
  fetch?: FetchFunction;
}

/** Whether the issuer is configured by its URL alone, its keys discovered. */
export const isDiscovered = (config: IssuerConfig): boolean => config.jwksUri === undefined && config.jwks === undefined && config.jwksFile === undefined;

export function issuerKeysOf(config: IssuerConfig, context: IssuerKeyContext): IssuerKeys {
  if (config.jwksUri !== undefined) return remoteIssuerKeys(config, config.jwksUri, context);
  if (config.jwks !== undefined) return localIssuerKeys(config, 'jwks', config.jwks as JSONWebKeySet);
  if (config.jwksFile !== undefined) return localIssuerKeys(config, 'jwksFile', readJwksFile(config.id, resolve(context.baseDir, config.jwksFile)));
  return new DiscoveredIssuerKeys(config, context);
}

function readJwksFile(issuerId: string, path: string): JSONWebKeySet {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as JSONWebKeySet;
  } catch (error) {
    throw new Error(`Issuer ${issuerId}: jwksFile ${path} cannot be read as JSON (${(error as Error).message}).`);
  }
}

function localIssuerKeys(config: IssuerConfig, keys: 'jwks' | 'jwksFile', jwks: JSONWebKeySet): IssuerKeys {
  return {
    getKey: createLocalJWKSet(jwks),
    status: () => ({ id: config.id, issuer: config.issuer, keys, state: 'ok' }),
    start: () => undefined,
    close: () => undefined,
  };
}

function remoteKeysAt(config: IssuerConfig, jwksUri: string, context: IssuerKeyContext): RemoteKeys {
  return new RemoteKeys(
    { id: config.id, issuer: config.issuer, jwksUri },
    {
      cacheMaxAgeMs: context.jwksCacheMs,
      cooldownMs: context.jwksCooldownMs,
      retryMinMs: context.retryMinMs,
      retryMaxMs: context.retryMaxMs,
      bounds: context.bounds,
      failures: context.failures,
      ...(context.fetch === undefined ? {} : { fetch: context.fetch }),
    },
  );
}

function remoteIssuerKeys(config: IssuerConfig, jwksUri: string, context: IssuerKeyContext): IssuerKeys {
  const remote = remoteKeysAt(config, jwksUri, context);
  return {
    getKey: remote.getKey,
    status: () => {
      const jwks = remote.status();
      return { id: config.id, issuer: config.issuer, keys: 'jwksUri', state: jwks.state, jwks };
    },
    start: () => undefined,
    close: () => undefined,
  };
}

/**
 * An issuer configured by its URL alone: the JWKS its discovery names, replaced when a later
 * discovery names another. Until the first discovery succeeded there are no keys, and its
 * tokens are refused (401, IssuerNotDiscovered); after that, a failing discovery keeps the
 * JWKS it had.
 */
class DiscoveredIssuerKeys implements IssuerKeys {
  private readonly discovery: IssuerDiscovery;
  private remote: RemoteKeys | undefined;

  constructor(
    private readonly config: IssuerConfig,
    private readonly context: IssuerKeyContext,
  ) {
    this.discovery = new IssuerDiscovery(
      { id: config.id, issuer: config.issuer },
      {
        refreshMs: context.discoveryRefreshMs,
        retryMinMs: context.retryMinMs,
        bounds: context.bounds,
        ...(context.logger === undefined ? {} : { logger: context.logger }),
        ...(context.fetch === undefined ? {} : { fetch: context.fetch }),
        onDiscovered: (jwksUri) => this.use(jwksUri),
      },
    );
  }

  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (this.remote === undefined) await this.discovery.firstAttempt();
    const remote = this.remote;
    if (remote === undefined) throw new IssuerNotDiscovered(this.config.id, this.discovery.failureCause());
    return remote.getKey(header, token);
  };

  status(): IssuerStatus {
    const discovery = this.discovery.status();
    const jwks = this.remote?.status();
    const states = [discovery.state, jwks?.state ?? 'pending'];
    const state = states.includes('failing') ? 'failing' : states.includes('pending') ? 'pending' : 'ok';
    return { id: this.config.id, issuer: this.config.issuer, keys: 'discovery', state, discovery, ...(jwks === undefined ? {} : { jwks }) };
  }

  start(): void {
    this.discovery.start();
  }

  close(): void {
    this.discovery.close();
  }

  /** A discovery named `jwksUri`: a new one gets a key set of its own, fetched at once. */
  private use(jwksUri: string): void {
    if (this.remote?.issuer.jwksUri === jwksUri) return;
    const remote = remoteKeysAt(this.config, jwksUri, this.context);
    this.remote = remote;
    void remote.refresh();
  }
}
