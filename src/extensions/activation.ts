// Which extensions a request activates (spec 4.6): those it names in the A2A-Extensions header
// (X-A2A-Extensions for 0.3 clients) that the agent declares, plus the extension whose method it
// calls. An extension the agent marks required must be named by every request that sends it a
// message, else ExtensionSupportRequiredError. The response names what was activated.
import { A2AError } from '../protocol/errors.ts';
import type { ExtensionDeclaration } from './definition.ts';

export const EXTENSIONS_HEADER = 'A2A-Extensions';
/** The 0.3 spelling; accepted from any client, and used to answer 0.3 requests. */
export const LEGACY_EXTENSIONS_HEADER = 'X-A2A-Extensions';

/** The extension URIs a request names, from either header (comma-separated, repeated fields joined). */
export function requestedExtensionsOf(header: (name: string) => string | undefined): string[] {
  const values = [header(EXTENSIONS_HEADER), header(LEGACY_EXTENSIONS_HEADER)].filter((value): value is string => value !== undefined);
  const uris = values.flatMap((value) => value.split(',')).map((uri) => uri.trim()).filter((uri) => uri !== '');
  return [...new Set(uris)];
}

export interface ActivationInput {
  requested: readonly string[];
  /** What the agent declares on its card. */
  declared: readonly ExtensionDeclaration[];
  /** The extension whose method the request calls, if any: calling it uses it. */
  ofMethod: string | undefined;
  /** The request sends the agent a message: required extensions must be named. */
  startsWork: boolean;
}

/** The extensions the request activates, in the agent's order; throws for a required one not named. */
export function activateExtensions(input: ActivationInput): string[] {
  const requested = new Set(input.requested);
  if (input.startsWork) {
    const missing = input.declared.filter((extension) => extension.required === true && !requested.has(extension.uri)).map((extension) => extension.uri);
    if (missing.length > 0) {
      throw new A2AError(
        'EXTENSION_SUPPORT_REQUIRED',
        `This agent requires the extension${missing.length > 1 ? 's' : ''} ${missing.join(', ')}; name ${missing.length > 1 ? 'them' : 'it'} in the ${EXTENSIONS_HEADER} header (comma-separated) to send it messages. Nothing was stored.`,
        { metadata: { requiredExtensions: missing.join(',') } },
      );
    }
  }
  return input.declared.filter((extension) => requested.has(extension.uri) || extension.uri === input.ofMethod).map((extension) => extension.uri);
}
