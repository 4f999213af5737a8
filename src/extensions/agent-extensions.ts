// The extensions one agent declares on its card: this gateway's own (their methods work on
// every agent), the statements of this deployment (delivery guarantees) and those its adapter
// declares. Checked when the agent is loaded, so a bad
// declaration stops the start instead of producing a card clients cannot use.
import type { Adapter } from '../../adapters/types.ts';
import type { ExtensionDeclaration } from './definition.ts';
import { GATEWAY_EXTENSIONS } from './gateway-extensions.ts';

export function extensionsOf(adapter: Adapter, deployment: readonly ExtensionDeclaration[] = []): ExtensionDeclaration[] {
  const declared: ExtensionDeclaration[] = GATEWAY_EXTENSIONS.map(({ uri, description, required, params }) => ({
    uri,
    description,
    ...(required === undefined ? {} : { required }),
    ...(params === undefined ? {} : { params }),
  }));
  declared.push(...deployment);
  for (const [index, extension] of (adapter.extensions ?? []).entries()) {
    const where = `adapter ${adapter.name}: extensions[${index}]`;
    if (extension === null || typeof extension !== 'object' || typeof extension.uri !== 'string' || !URL.canParse(extension.uri)) {
      throw new Error(`${where} needs a uri that is an absolute URI (e.g. "https://example.com/ext/v1" or "urn:example:ext:v1")`);
    }
    if (declared.some((other) => other.uri === extension.uri)) throw new Error(`${where}: the extension ${extension.uri} is declared twice`);
    if (extension.required !== undefined && typeof extension.required !== 'boolean') throw new Error(`${where}.required must be true or false`);
    declared.push({ ...extension });
  }
  return declared;
}
