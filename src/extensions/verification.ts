// The verification extension: a caller that activates it (A2A-Extensions) asks to be told
// whether the result of its task was checked. A completed task then always says so in
// metadata.a2aGateway.outcome, verified or not, with why not where the agent checks nothing.
// Without it only agents that verify their results report an outcome (invariant 8), so "not
// verified" is never printed on tasks where nobody asked. No methods: activating it is the ask.
import { defineExtension } from './definition.ts';

export const VERIFICATION_EXTENSION_URI = 'urn:a2a-gateway:ext:verification:v1';

export const verificationExtension = defineExtension({
  uri: VERIFICATION_EXTENSION_URI,
  description:
    'Asks whether the result was checked: a message whose request activates this extension (A2A-Extensions) completes its task with ' +
    'metadata.a2aGateway.outcome, {verified, method, evidence?}, also where the agent checks nothing (verified false, and why).',
  required: false,
  methods: [],
});
