// Spec 3.6: the A2A-Version service parameter (a header, or a query parameter) selects the
// protocol version; a missing one means 0.3. Patch numbers are ignored ("1.0.2" is 1.0).
import { A2AError } from './errors.ts';

export const PROTOCOL_VERSION = '1.0';
export const LEGACY_PROTOCOL_VERSION = '0.3';

/** The versions this gateway speaks: 1.0, and 0.3 through its compatibility layer (src/compat/v0_3). */
export type ProtocolVersion = typeof PROTOCOL_VERSION | typeof LEGACY_PROTOCOL_VERSION;

export const SUPPORTED_VERSIONS: readonly ProtocolVersion[] = [PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION];

/** The version a request asks for ("0.3" when it names none), as major.minor, or its text when unreadable. */
export function requestedVersionOf(header: string | undefined, query: string | undefined): string {
  const requested = (header ?? query ?? '').trim();
  if (requested === '') return LEGACY_PROTOCOL_VERSION;
  const majorMinor = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(requested);
  return majorMinor === null ? requested : `${Number(majorMinor[1])}.${Number(majorMinor[2])}`;
}

/** The version the request is served in, or undefined when neither layer speaks it. */
export function servedVersionOf(header: string | undefined, query: string | undefined): ProtocolVersion | undefined {
  const requested = requestedVersionOf(header, query);
  return SUPPORTED_VERSIONS.find((version) => version === requested);
}

/** Throws VersionNotSupportedError for a version neither layer speaks; returns the one served. */
export function negotiateVersion(header: string | undefined, query: string | undefined): ProtocolVersion {
  const served = servedVersionOf(header, query);
  if (served !== undefined) return served;
  const raw = (header ?? query ?? '').trim();
  const shown = raw === '' ? 'none (which means 0.3)' : `"${raw}"`;
  const supported = SUPPORTED_VERSIONS.join(', ');
  throw new A2AError(
    'VERSION_NOT_SUPPORTED',
    `A2A protocol version ${shown} is not supported; this agent serves ${supported}. Send the header "A2A-Version: ${PROTOCOL_VERSION}" (or "${LEGACY_PROTOCOL_VERSION}" for the 0.3 wire form).`,
    { metadata: { requestedVersion: raw, supportedVersions: supported } },
  );
}

/**
 * A request in one version for what only the other has (a 1.0 method or route without
 * A2A-Version 1.0, which means 0.3): VersionNotSupportedError naming the version to send.
 */
export function wrongVersionFor(what: string, requested: { header: string | undefined; query: string | undefined }, needed: ProtocolVersion): A2AError {
  const raw = (requested.header ?? requested.query ?? '').trim();
  const shown = raw === '' ? `${LEGACY_PROTOCOL_VERSION} (no A2A-Version means ${LEGACY_PROTOCOL_VERSION})` : raw;
  return new A2AError('VERSION_NOT_SUPPORTED', `${what} is part of A2A ${needed}, but the request is for A2A ${shown}. Send the header "A2A-Version: ${needed}".`, {
    metadata: { requestedVersion: raw, supportedVersions: needed },
  });
}
