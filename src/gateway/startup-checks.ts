// What the gateway role reads and checks before it connects to anything: a refused setting or
// an unreadable key file is a configuration error, reported before a port is bound.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { loadGatewayKeys, type GatewayKeys } from '../auth/keys/gateway-keys.ts';
import { createProxyTrust, type ProxyTrust } from '../bindings/http/proxy-trust.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { loadPushSigningKeys, type PushSigningKeys } from '../push/signing-key.ts';

export interface GrpcTls {
  certChain: Buffer;
  privateKey: Buffer;
}

export interface GatewaySecrets {
  proxyTrust: ProxyTrust;
  keys: GatewayKeys;
  /** Receivers verify webhook signatures with its public half, published beside the card's key. */
  pushSigningKeys: PushSigningKeys | undefined;
  grpcTls: GrpcTls | undefined;
}

export async function loadGatewaySecrets(config: GatewayConfig, baseDir: string): Promise<GatewaySecrets> {
  refuseDevelopmentIssuerInProduction(config);
  const proxyTrust = proxyTrustOf(config);
  const keys = await loadGatewayKeys(config, baseDir);
  const pushSigningKeys = config.push.enabled ? await loadPushSigningKeys(config, baseDir) : undefined;
  const grpcTls = config.grpcPort === 'off' ? undefined : await loadGrpcTls(config, baseDir);
  return { proxyTrust, keys, pushSigningKeys, grpcTls };
}

/**
 * With no issuer configured the gateway trusts a development issuer whose key lies in dataDir:
 * fine on a laptop, a hole in production. Production (NODE_ENV=production or production=true)
 * must name its issuers.
 */
function refuseDevelopmentIssuerInProduction(config: GatewayConfig): void {
  if (!config.production || !config.auth.enabled || config.auth.issuers.length > 0) return;
  throw new Error(
    'refusing to start: production mode (NODE_ENV=production or production=true) and no token issuer is configured, so only the development issuer would be trusted; configure auth.issuers in the A2A_CONFIG file (see docs/security.md).',
  );
}

function proxyTrustOf(config: GatewayConfig): ProxyTrust {
  try {
    return createProxyTrust(config.trustProxy);
  } catch (error) {
    throw new Error(`trustProxy (A2A_TRUST_PROXY): ${(error as Error).message}; give true, false, or proxy addresses and CIDR ranges.`);
  }
}

/** The gRPC binding's certificate and key, when both are configured; one without the other is a configuration error. */
async function loadGrpcTls(config: GatewayConfig, baseDir: string): Promise<GrpcTls | undefined> {
  const { grpcTlsCertFile: certFile, grpcTlsKeyFile: keyFile } = config;
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new Error('grpcTlsCertFile and grpcTlsKeyFile (A2A_GRPC_TLS_CERT_FILE, A2A_GRPC_TLS_KEY_FILE) go together: set both for TLS on the gRPC port, or neither for plaintext HTTP/2.');
  }
  const read = async (file: string, what: string): Promise<Buffer> => {
    const path = resolve(baseDir, file);
    try {
      return await readFile(path);
    } catch (error) {
      throw new Error(`${what} ${path} cannot be read (${(error as Error).message}).`);
    }
  };
  return { certChain: await read(certFile, 'grpcTlsCertFile'), privateKey: await read(keyFile, 'grpcTlsKeyFile') };
}
