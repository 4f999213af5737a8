/** The trace id of a W3C traceparent header ("00-<trace id>-<span id>-<flags>"), if well-formed. */
export function traceIdOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/.exec(value?.trim() ?? '')?.[1];
}
