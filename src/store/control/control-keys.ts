// The control plane's keys (src/control/): every one carries the hash tag `{control}`, so they
// share one Cluster slot and one script may change a resource, the change sequence and the
// audit together (docs/redis-slots.md). The change channel is not a key: PUBLISH reaches every
// subscriber of the Cluster whatever its name.

export interface ControlKeys {
  /** HASH "<kind>/<name>" → the resource's last version; kept after a delete (plus the scripts' call memo). */
  versions: string;
  /** HASH "<kind>/<name>" → the resource JSON (kind, name, tenant, spec, updatedAt, updatedBy). */
  resources: string;
  /** STRING: the change sequence, one more per change of any resource (a new one starts at the first write's time in µs). */
  sequence: string;
  /** STREAM of audit entries (actor, action, kind, name, tenant, version, seq, at), oldest first. */
  audit: string;
  /** HASH claim → "<kind>/<name>" holding it: values unique across resources (a partner's keyId, an issuer's iss). */
  claims: string;
  /** HASH "<kind>/<name>" → the claims it holds, joined by newlines. */
  claimed: string;
  /** Pub/sub channel: the change sequence after each change, so processes reload at once. */
  changes: string;
}

export function controlKeys(prefix: string): ControlKeys {
  const base = `${prefix}:{control}`;
  return {
    versions: `${base}:versions`,
    resources: `${base}:resources`,
    sequence: `${base}:seq`,
    audit: `${base}:audit`,
    claims: `${base}:claims`,
    claimed: `${base}:claimed`,
    changes: `${prefix}:control:changes`,
  };
}

/** The field of one resource in the versions and resources hashes. */
export const resourceField = (kind: string, name: string): string => `${kind}/${name}`;
