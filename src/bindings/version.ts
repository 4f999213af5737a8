import { A2AError } from '../protocol/errors.ts';

export const PROTOCOL_VERSION = '1.0';

/**
 * Spec 3.6: the A2A-Version service parameter (header, or query parameter) selects the
 * protocol version; a missing one means 0.3. Patch numbers are ignored ("1.0.2" is 1.0).
 */
export function checkProtocolVersion(header: string | undefined, query: string | undefined): void {
  const requested = (header ?? query ?? '').trim();
  const majorMinor = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(requested);
  if (majorMinor !== null && `${majorMinor[1]}.${majorMinor[2]}` === PROTOCOL_VERSION) return;
  const shown = requested === '' ? 'none (which means 0.3)' : `"${requested}"`;
  throw new A2AError(
    'VERSION_NOT_SUPPORTED',
    `A2A protocol version ${shown} is not supported; this agent serves ${PROTOCOL_VERSION}. Send the header "A2A-Version: ${PROTOCOL_VERSION}".`,
    { metadata: { requestedVersion: requested, supportedVersions: PROTOCOL_VERSION } },
  );
}
