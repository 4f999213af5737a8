// GET /.well-known/jwks.json: the public keys verifiers need for what this gateway signs
// (the agent card's `jku` points here).
import type { Env, Hono } from 'hono';
import type { JWK } from 'jose';
import { publicJwkOf } from '../auth/keys/key-file.ts';

export const JWKS_PATH = '/.well-known/jwks.json';

/** Every key goes through publicJwkOf, so handing this a private JWK by mistake leaks nothing. */
export function jwksResponseBody(keys: JWK[]): { keys: JWK[] } {
  return { keys: keys.map(publicJwkOf) };
}

/** `getKeys` is called per request, so a rotated key shows up without re-registering. */
export function registerJwksRoute<E extends Env>(app: Hono<E>, getKeys: () => JWK[]): void {
  app.get(JWKS_PATH, (c) =>
    c.body(JSON.stringify(jwksResponseBody(getKeys())), 200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'public, max-age=300',
      'Access-Control-Allow-Origin': '*',
    }),
  );
}
