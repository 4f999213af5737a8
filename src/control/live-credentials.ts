// Partners and issuers written through the admin API take effect like those of the
// configuration file: after each change of the view, the signature verifier and the JWT
// verifier are given the configuration's set plus the store's. The configuration file stays
// the bootstrap and wins: a stored partner or issuer that would clash with a configured one
// (same id, same keyId, same `iss`) is refused when written, and if one slips in anyway (two
// writes racing on different gateways) it is left out here and logged, never half applied.
import type { JwtVerifier } from '../auth/jwt/jwt-verifier.ts';
import type { RequestSignatureVerifier } from '../auth/signatures/verify-request.ts';
import type { IssuerConfig, PartnerConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import type { ControlView } from './control-view.ts';

export interface LiveCredentialsSetup {
  view: ControlView;
  /** The configuration's partners and issuers (or the development issuer): always in effect. */
  configPartners: readonly PartnerConfig[];
  configIssuers: readonly IssuerConfig[];
  signatures: RequestSignatureVerifier;
  jwt: JwtVerifier;
  logger: Logger;
}

/** The configuration's partners, then each stored one that clashes with none before it. */
export function mergedPartners(configPartners: readonly PartnerConfig[], stored: readonly PartnerConfig[], logger: Logger): PartnerConfig[] {
  const merged = [...configPartners];
  const ids = new Set(merged.map((partner) => partner.id));
  const keyIds = new Set(merged.flatMap((partner) => partner.keys.map((key) => key.keyId)));
  for (const partner of stored) {
    const clash = ids.has(partner.id) ? `id ${partner.id}` : partner.keys.find((key) => keyIds.has(key.keyId))?.keyId;
    if (clash !== undefined) {
      logger.warn('a stored partner clashes with another partner and is left out; delete or rename it through the admin API', { partner: partner.id, clash });
      continue;
    }
    merged.push(partner);
    ids.add(partner.id);
    for (const key of partner.keys) keyIds.add(key.keyId);
  }
  return merged;
}

/** The base issuers, then each stored one whose id and `iss` are new. */
export function mergedIssuers(base: readonly IssuerConfig[], stored: readonly IssuerConfig[], logger: Logger): IssuerConfig[] {
  const merged = [...base];
  const ids = new Set(merged.map((issuer) => issuer.id));
  const names = new Set(merged.map((issuer) => issuer.issuer));
  for (const issuer of stored) {
    if (ids.has(issuer.id) || names.has(issuer.issuer)) {
      logger.warn('a stored issuer clashes with another issuer (same id or iss) and is left out; delete it through the admin API', { issuer: issuer.id });
      continue;
    }
    merged.push(issuer);
    ids.add(issuer.id);
    names.add(issuer.issuer);
  }
  return merged;
}

/** Keeps the verifiers on the live set from now on. */
export function connectLiveCredentials(setup: LiveCredentialsSetup): void {
  const { view, signatures, jwt, logger } = setup;
  let partnersApplied = '';
  let issuersApplied = '';
  // Two listeners: a set that cannot be applied (a clash slipped past) keeps the previous one of its kind only.
  view.onChange(() => {
    const partners = mergedPartners(setup.configPartners, view.list('partners').map((resource) => resource.spec), logger);
    const partnersText = JSON.stringify(partners);
    if (partnersText === partnersApplied) return;
    signatures.replacePartners(partners);
    partnersApplied = partnersText;
  });
  view.onChange(() => {
    const issuers = mergedIssuers(setup.configIssuers, view.list('issuers').map((resource) => resource.spec), logger);
    const issuersText = JSON.stringify(issuers);
    // Only on a change of the set: replacing forgets the verified tokens.
    if (issuersText === issuersApplied) return;
    jwt.replaceIssuers(issuers);
    issuersApplied = issuersText;
  });
}
