// The control plane's refusals, each naming what to do: a field that is wrong (zod's issues as
// field violations), a resource that is not there, a version that moved on, a clash.
import type { z } from 'zod';
import { A2AError } from '../protocol/errors.ts';

/** 400 naming every field zod refused. */
export function invalidBody(what: string, error: z.ZodError): A2AError {
  const violations = error.issues.map((issue) => ({ field: issue.path.length === 0 ? '(body)' : issue.path.join('.'), description: issue.message }));
  const first = violations[0];
  return new A2AError('INVALID_PARAMS', `${what} is not valid${first === undefined ? '' : `: ${first.field} ${first.description}`}. Nothing was changed.`, {
    metadata: { reason: 'INVALID_RESOURCE' },
    violations,
  });
}

/** 400 for one field. */
export const invalidField = (field: string, description: string): A2AError =>
  new A2AError('INVALID_PARAMS', `${field} ${description}. Nothing was changed.`, { metadata: { reason: 'INVALID_RESOURCE' }, violations: [{ field, description }] });

export const notFound = (kind: string, name: string): A2AError =>
  new A2AError('INVALID_REQUEST', `There is no ${kind} resource "${name}" (or it is not in your tenant). GET /admin/v1/${kind} lists those you may see.`, {
    httpStatus: 404,
    metadata: { reason: 'RESOURCE_NOT_FOUND', kind, name },
  });

/** 412: the resource is at another version than If-Match said. */
export const staleVersion = (kind: string, name: string, current: number): A2AError =>
  new A2AError(
    'INVALID_REQUEST',
    current === 0
      ? `The ${kind} resource "${name}" does not exist, so If-Match cannot match. Nothing was changed.`
      : `The ${kind} resource "${name}" is at version ${current}, not the one If-Match names (or If-None-Match: * found it): someone changed it since you read it. GET it again, then retry. Nothing was changed.`,
    { httpStatus: 412, metadata: { reason: 'VERSION_MISMATCH', currentVersion: String(current) } },
  );

export const conflict = (message: string, field?: string): A2AError =>
  new A2AError('ALREADY_EXISTS', `${message} Nothing was changed.`, {
    metadata: { reason: 'RESOURCE_CONFLICT' },
    ...(field === undefined ? {} : { violations: [{ field, description: message }] }),
  });

export const storeFull = (count: number): A2AError =>
  new A2AError('RESOURCE_EXHAUSTED', `The control plane holds ${count} resources, as many as it may: delete some first. Nothing was changed.`, {
    httpStatus: 507,
    metadata: { reason: 'CONTROL_PLANE_FULL' },
  });
