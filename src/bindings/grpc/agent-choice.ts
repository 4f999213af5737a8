// Which agent a gRPC call is for. All agents share the one gRPC port, and a gRPC call has no
// path: the `a2a-agent` metadata names one, else a tenant of the form `agents/<name>` (what a
// named agent's card declares on its GRPC interface, which clients put in every request; the
// tenant is then removed, so the caller acts in its own), else the call is the default agent's.
import type { AgentEndpoint } from '../../agents/agent-endpoint.ts';
import { A2AError } from '../../protocol/errors.ts';
import { AGENT_METADATA_KEY, agentOfTenant, type CallHeaders } from './call-metadata.ts';

/** No agent of the name the call gives: NOT_FOUND, like an unknown agent's URL on HTTP (and not TaskNotFound). */
export class UnknownAgentError extends Error {}

export interface GrpcAgents {
  /** The default agent: calls that name none. */
  root: AgentEndpoint;
  /** Every agent, by name. */
  endpoints: ReadonlyMap<string, AgentEndpoint>;
}

/** The endpoint a call is for; removes an `agents/<name>` tenant from `params`. */
export function endpointOf(headers: CallHeaders, params: Record<string, unknown>, agents: GrpcAgents): AgentEndpoint {
  const named = headers.header(AGENT_METADATA_KEY)?.trim();
  const fromTenant = agentOfTenant(params.tenant);
  if (fromTenant !== undefined) delete params.tenant;
  if (named !== undefined && fromTenant !== undefined && named !== fromTenant) {
    throw new A2AError('INVALID_PARAMS', `The call names agent "${named}" in its ${AGENT_METADATA_KEY} metadata but "${fromTenant}" in its tenant; name one.`, {
      violations: [{ field: 'tenant', description: `names agent "${fromTenant}", the ${AGENT_METADATA_KEY} metadata "${named}"` }],
    });
  }
  const name = named ?? fromTenant;
  if (name === undefined) return agents.root;
  const endpoint = agents.endpoints.get(name);
  if (endpoint === undefined) throw new UnknownAgentError(`There is no agent "${name}" here; GET /agents on the gateway's HTTP port lists the agents you may use.`);
  return endpoint;
}
