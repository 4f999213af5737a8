// A small client of the admin API (/admin/v1) for the control-plane suites.
export interface AdminAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export async function adminCall(baseUrl: string, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<AdminAnswer> {
  const text = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const response = await fetch(`${baseUrl}/admin/v1${path}`, {
    method,
    headers: {
      ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
      ...(text === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(options.headers ?? {}),
    },
    ...(text === undefined ? {} : { body: text }),
  });
  const raw = await response.text();
  return { status: response.status, headers: response.headers, body: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>) };
}

/** The field names of an error's BadRequest detail. */
export function violatedFields(body: Record<string, unknown>): string[] {
  const details = ((body.error as { details?: { fieldViolations?: { field: string }[] }[] } | undefined)?.details ?? []);
  return details.flatMap((detail) => detail.fieldViolations?.map((violation) => violation.field) ?? []);
}
