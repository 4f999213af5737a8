// An extension (spec 4.6) as this gateway declares it: what the agent card says about it and
// the methods it adds. A gateway extension's methods are operations like any other (specs in
// src/protocol/operations/extensions.ts, handlers in src/operations): the registry serves them
// on both bindings, checks their scopes and routes them, and a call to one activates its
// extension. Adapters declare extensions of their own (Adapter.extensions) without methods.
import type { OperationSpec } from '../protocol/operations/spec.ts';
import type { JsonObject } from '../protocol/types.ts';

/** What an agent card says about an extension (AgentExtension, spec 4.4.4). */
export interface ExtensionDeclaration {
  /** Identifies the extension; a breaking change gets a new URI (spec 4.6.3). */
  uri: string;
  description?: string;
  /** The client must activate it (A2A-Extensions) to send messages to the agent. */
  required?: boolean;
  params?: JsonObject;
}

export interface GatewayExtension extends ExtensionDeclaration {
  description: string;
  /** The methods the extension adds (JSON-RPC methods and HTTP+JSON routes). */
  methods: readonly OperationSpec[];
}

/** Declares a gateway extension; its methods join the operation registry. */
export function defineExtension(extension: GatewayExtension): GatewayExtension {
  return extension;
}
