// The caller JWT the gateway sends a backend (setting callerIdentity): who the call is for
// (`sub`), who makes it (`act`: the gateway, and nested inside it the coordinators whose turns
// delegated the task, RFC 8693 section 4.1), for which backend (`aud`: its configured origin)
// and which task. Signed with the gateway's caller identity key, whose public half is at
// <publicUrl>/.well-known/jwks.json, so a backend verifies it without sharing a secret.
import { importJWK, SignJWT, type JWK } from 'jose';
import type { AdapterContext, CallerTokens } from '../../adapters/types.ts';
import type { CallerIdentitySettings } from '../config/schema/caller-identity.ts';
import { newId } from '../ids.ts';
import { signingAlgorithmOf, type SigningAlgorithm } from './keys/key-file.ts';

/** The token's JWS `typ` (RFC 8725 explicit typing): a backend can refuse any other JWT in the header. */
export const CALLER_TOKEN_TYPE = 'a2a-caller+jwt';

/** RFC 8693 actor: who acts, and (nested) on whose behalf that actor was acting. */
export interface ActorClaim {
  sub: string;
  /** The coordinator task whose turn acted (a delegating actor only). */
  a2a_task_id?: string;
  act?: ActorClaim;
}

/** What one token says about one backend call. */
export interface CallerClaimsInput {
  /** The task owner: `user:<issuer>:<sub>`, `partner:<id>` or `anonymous`. */
  principal: string;
  /** The caller's tenant ("" = the default tenant; then no claim). */
  tenant: string;
  /** The gateway agent the task was sent to. */
  agent: string;
  taskId: string;
  contextId: string;
  /** Coordinator tasks that delegated this one, nearest first. */
  delegatedBy: readonly string[];
  /** The backend's origin. */
  audience: string;
}

/**
 * `act` for a call the gateway makes: the gateway itself, and inside it, nearest first, the
 * coordinators whose turns delegated the task (`agent:<name>` with the coordinator's task id).
 */
export function actorChain(issuer: string, agent: string, delegatedBy: readonly string[]): ActorClaim {
  let prior: ActorClaim | undefined;
  for (const taskId of [...delegatedBy].reverse()) prior = { sub: `agent:${agent}`, a2a_task_id: taskId, ...(prior === undefined ? {} : { act: prior }) };
  return { sub: issuer, ...(prior === undefined ? {} : { act: prior }) };
}

/** Signs caller tokens with one key, as one issuer (the gateway's public URL). */
export class CallerTokenSigner {
  private constructor(
    readonly issuer: string,
    private readonly key: Awaited<ReturnType<typeof importJWK>>,
    private readonly alg: SigningAlgorithm,
    private readonly kid: string | undefined,
  ) {}

  static async create(privateJwk: JWK, issuer: string): Promise<CallerTokenSigner> {
    const alg = signingAlgorithmOf(privateJwk);
    const key = await importJWK(privateJwk, alg);
    return new CallerTokenSigner(issuer.replace(/\/+$/, ''), key, alg, privateJwk.kid);
  }

  sign(input: CallerClaimsInput, lifetimeSeconds: number, nowMs: number = Date.now()): Promise<string> {
    const iat = Math.floor(nowMs / 1000);
    return new SignJWT({
      act: actorChain(this.issuer, input.agent, input.delegatedBy),
      a2a_agent: input.agent,
      a2a_task_id: input.taskId,
      a2a_context_id: input.contextId,
      ...(input.tenant === '' ? {} : { a2a_tenant: input.tenant }),
    })
      .setProtectedHeader({ alg: this.alg, typ: CALLER_TOKEN_TYPE, ...(this.kid === undefined ? {} : { kid: this.kid }) })
      .setIssuer(this.issuer)
      .setAudience(input.audience)
      .setSubject(input.principal)
      .setIssuedAt(iat)
      .setExpirationTime(iat + lifetimeSeconds)
      .setJti(newId())
      .sign(this.key);
  }
}

/** The backend's origin as the token's audience; anything but an http(s) origin is a programming error. */
function originOf(origin: string): string {
  const url = new URL(origin);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError(`a caller token's audience must be an http(s) origin, not ${url.protocol}`);
  return url.origin;
}

/** What an adapter of a backend with callerIdentity on gets (AdapterEnvironment.callerIdentity); undefined when it is off. */
export function callerTokensFor(settings: CallerIdentitySettings, signer: CallerTokenSigner | undefined): CallerTokens | undefined {
  if (!settings.enabled || signer === undefined) return undefined;
  return {
    header: settings.header,
    token: (ctx: AdapterContext, origin: string) =>
      signer.sign(
        {
          principal: ctx.caller.principal,
          tenant: ctx.caller.tenant,
          agent: ctx.caller.agent,
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          delegatedBy: ctx.caller.delegatedBy ?? [],
          audience: originOf(origin),
        },
        settings.lifetimeSeconds,
      ),
  };
}

/** Delegation deeper than this is not followed further (the chain is for the backend's information, not a loop). */
export const MAX_DELEGATION_DEPTH = 8;

/**
 * The coordinators above a sub-agent's task, nearest first: its own coordinator, then each
 * coordinator's coordinator, read from the server's links (`parentOf`), never from metadata.
 */
export async function delegationChain(parentTaskId: string | undefined, parentOf: (taskId: string) => Promise<string | undefined>): Promise<string[]> {
  const chain: string[] = [];
  for (let next = parentTaskId; next !== undefined && chain.length < MAX_DELEGATION_DEPTH && !chain.includes(next); next = await parentOf(next)) chain.push(next);
  return chain;
}
