// Sends one JSON-RPC SendMessage to the gateway as a partner, signing the request (RFC 9421,
// with an RFC 9530 Content-Digest of the body) instead of sending a bearer token.
//
//   node --import tsx examples/signed-request.mjs <gateway-url> <key-id> <private-jwk-file> [text]
//
// e.g. node --import tsx examples/signed-request.mjs http://127.0.0.1:8080 acme-ed-1 ./acme-ed-1.private.jwk 'hello'
//
// `--import tsx` is needed because the signer is imported from the gateway's TypeScript source.
// <gateway-url> is the gateway's public URL (/a2a/jsonrpc is appended unless it is there): the
// signature covers the full URL, so it must be the address the gateway knows itself by. Behind
// a reverse proxy that mounts the gateway under a path, include it (http://host/gw); the gateway
// learns the prefix from its publicUrl or from a trusted proxy's X-Forwarded-Prefix.
// The key is an Ed25519 (OKP) or P-256 (EC) private JWK; the gateway's config lists its public
// part under auth.partners[].keys with the same keyId. To make a pair:
//   node -e "const {generateKeyPairSync:g}=require('crypto');const k=g('ed25519');
//            console.log(JSON.stringify(k.privateKey.export({format:'jwk'})));
//            console.log(JSON.stringify(k.publicKey.export({format:'jwk'})))"
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { signRequest } from '../src/auth/signatures/sign-request.ts';

const [gateway, keyId, jwkFile, text = 'hello from a signed request'] = process.argv.slice(2);
if (!gateway || !keyId || !jwkFile) {
  console.error('usage: node --import tsx examples/signed-request.mjs <gateway-url> <key-id> <private-jwk-file> [text]');
  process.exit(2);
}

const url = new URL(gateway);
if (!url.pathname.endsWith('/a2a/jsonrpc')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/a2a/jsonrpc`;
const privateKey = JSON.parse(readFileSync(jwkFile, 'utf8'));
const alg = privateKey.kty === 'OKP' ? 'ed25519' : 'ecdsa-p256-sha256';

// The exact string signed is the exact string sent: the digest covers these bytes.
const body = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } },
});

const headers = await signRequest({
  method: 'POST',
  url: url.href,
  headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
  body,
  keyId,
  privateKey,
  alg,
});

const response = await fetch(url, { method: 'POST', headers, body });
console.log(response.status, response.statusText);
console.log(JSON.stringify(await response.json().catch(() => null), null, 2));
