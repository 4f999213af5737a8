// The cards declare how to authenticate (agent-card/card.ts): an OpenID Connect scheme for each
// issuer configured by its URL alone. Issuers written through the admin API change that set
// while the gateway runs, so after each change of the control-plane view (the JWT verifier has
// been given the new set by then: live-credentials.ts listens first) every card whose declared
// security moved is built again, at this gateway as at every other one.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import type { ControlView } from '../control/control-view.ts';

/**
 * `declared` says what the cards declare of authentication now (compared as text); `endpoints`
 * lists every endpoint serving cards at the moment of a change (the root one and each agent's).
 */
export function keepCardSecurityLive(view: ControlView, declared: () => unknown, endpoints: () => Iterable<AgentEndpoint>): void {
  let applied = JSON.stringify(declared());
  view.onChange(() => {
    const now = JSON.stringify(declared());
    if (now === applied) return;
    applied = now;
    for (const endpoint of endpoints()) endpoint.cards.securityChanged();
  });
}
