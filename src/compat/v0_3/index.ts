// The A2A 0.3 layer: requests whose A2A-Version is 0.3 (or absent) are served in 0.3 wire form
// over the same operations and the same durable core. The operation registry declares each
// operation's 0.3 names (operation.legacy); this folder translates requests, results, stream
// events, errors and the agent card.
export { legacyCardOf } from './card.ts';
export { LEGACY_TRANSLATIONS, type LegacyForm, type LegacyTranslation } from './operations.ts';
export { legacyStreamFrame } from './stream.ts';
export { legacyRestErrorBody } from './errors.ts';
