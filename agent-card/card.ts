// The public agent card (spec 8): what this gateway serves, built from configuration and
// the adapter's skills, with the caching validators of spec 8.6.
import { createHash } from 'node:crypto';
import type { Adapter } from '../adapters/types.ts';
import { JSONRPC_PATH, REST_BASE_PATH } from '../src/bindings/rest/routes.ts';
import { PROTOCOL_VERSION } from '../src/bindings/version.ts';
import type { AgentCard } from '../src/protocol/types.ts';

export interface CardInput {
  publicUrl: string;
  name: string;
  description: string;
  version: string;
  adapter: Adapter;
}

export interface ServedCard {
  card: AgentCard;
  json: string;
  etag: string;
  lastModified: string;
}

export function buildAgentCard(input: CardInput): AgentCard {
  const { adapter } = input;
  return {
    name: input.name,
    description: input.description,
    // Preference order (spec 8.3.1): JSON-RPC is the primary binding.
    supportedInterfaces: [
      { url: `${input.publicUrl}${JSONRPC_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: PROTOCOL_VERSION },
      { url: `${input.publicUrl}${REST_BASE_PATH}`, protocolBinding: 'HTTP+JSON', protocolVersion: PROTOCOL_VERSION },
    ],
    version: input.version,
    // Only what works: streams with replay; no push notifications and no extended card yet.
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    defaultInputModes: adapter.defaultInputModes ?? ['text/plain'],
    defaultOutputModes: adapter.defaultOutputModes ?? ['text/plain'],
    skills: adapter.skills,
  };
}

export function serveAgentCard(card: AgentCard, builtAt: Date = new Date()): ServedCard {
  const json = JSON.stringify(card);
  const etag = `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`;
  return { card, json, etag, lastModified: builtAt.toUTCString() };
}
