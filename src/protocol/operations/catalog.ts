// Every operation this gateway serves, in the order the bindings and the docs list them: A2A
// 1.0's, its extensions' methods, then the operators'. The operation registry
// (src/operations/registry.ts) serves exactly these, each with its handler.
import type { Scope } from '../scopes.ts';
import { A2A_SPECS } from './a2a.ts';
import { listTaskAssignments, SCHEDULE_SPECS } from './extensions.ts';
import { OPERATOR_SPECS } from './operator.ts';
import { SUBSCRIPTION_SPECS } from './subscriptions.ts';
import type { OperationSpec } from './spec.ts';

export const OPERATION_SPECS: readonly OperationSpec[] = [...A2A_SPECS, listTaskAssignments, ...SCHEDULE_SPECS, ...SUBSCRIPTION_SPECS, ...OPERATOR_SPECS];

/** Which scope each operation needs, by name. */
export function operationScopes(specs: readonly OperationSpec[] = OPERATION_SPECS): Record<string, Scope> {
  return Object.fromEntries(specs.map((spec) => [spec.name, spec.scope]));
}
