// The one path a request is served under. Every decision about a request (which agent and
// binding, which Hono route, whether an admin surface's guard runs) is taken on this path, so
// no spelling of a target can be authorized as one path and routed as another. It is the
// RFC 3986 normal form of the target's path (section 6.2.2): escapes of unreserved characters
// decoded, the remaining escapes in upper case, dot segments removed (escaped ones too), and
// repeated slashes collapsed. A target that has no single safe reading is refused instead:
// invalid or NUL escapes, an escaped slash or backslash (a segment that would be split by one
// reader and not by another), a raw backslash (URL parsers read it as a slash), characters
// RFC 3986 does not allow in a target, a fragment, and an absolute-form target for another
// host than the one the request is addressed to. The target's bytes are bounded by Node's
// header size limit before the request reaches the gateway; this pass is linear in them.

/** A target's canonical form, or why it has none. */
export type CanonicalTarget = { path: string; query: string } | { refused: string };

const HEX = /^[0-9A-Fa-f]{2}$/;
/** RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** What RFC 3986 allows in a path besides "/" and escapes: unreserved, sub-delims, ":" and "@". */
const PATH_CHAR = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]$/;
/** What the query may hold: printable ASCII but a space, "#" (a fragment is never sent) and "\\". */
const QUERY_TEXT = /^[\x21\x22\x24-\x5b\x5d-\x7e]*$/;

/** One path segment with unreserved escapes decoded and the others upper-cased; a string says why it was refused. */
function normalizeSegment(segment: string): { text: string } | { refused: string } {
  let text = '';
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i] as string;
    if (char !== '%') {
      if (char === '\\') return { refused: 'a backslash in the path' };
      if (!PATH_CHAR.test(char)) return { refused: `the character ${JSON.stringify(char)} in the path (percent-encode it)` };
      text += char;
      continue;
    }
    const hex = segment.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return { refused: `the invalid percent-escape "${segment.slice(i, i + 3)}"` };
    const code = Number.parseInt(hex, 16);
    const decoded = String.fromCharCode(code);
    if (code === 0) return { refused: 'an encoded NUL (%00) in the path' };
    if (decoded === '/' || decoded === '\\') return { refused: `an encoded ${decoded === '/' ? 'slash (%2F)' : 'backslash (%5C)'} in the path` };
    text += UNRESERVED.test(decoded) ? decoded : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return { text };
}

/** The path in normal form: segments normalized, empty ones dropped, "." and ".." resolved (RFC 3986 5.2.4). */
function canonicalPath(path: string): { path: string } | { refused: string } {
  const segments: string[] = [];
  const parts = path.split('/');
  // parts[0] is the empty string before the leading "/".
  let endsInDirectory = false;
  for (let i = 1; i < parts.length; i++) {
    const normalized = normalizeSegment(parts[i] as string);
    if ('refused' in normalized) return normalized;
    const segment = normalized.text;
    const last = i === parts.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..') segments.pop();
      endsInDirectory = last;
      continue;
    }
    if (segment === '') {
      endsInDirectory = last;
      continue;
    }
    segments.push(segment);
    endsInDirectory = false;
  }
  const joined = `/${segments.join('/')}`;
  return { path: endsInDirectory && segments.length > 0 ? `${joined}/` : joined };
}

/**
 * The origin-form target of a request: the target itself, or the path and query of an
 * absolute-form one (RFC 9112 3.2.2) addressed to the request's own host.
 */
function originForm(target: string, host: string | undefined): { target: string } | { refused: string } {
  if (target.startsWith('/')) return { target };
  const absolute = /^https?:\/\/([^/?#]*)(.*)$/i.exec(target);
  if (absolute === null) return { refused: 'a request target that is neither a path starting with "/" nor an absolute URL' };
  const [, authority = '', rest = ''] = absolute;
  if (authority.includes('@') || host === undefined || authority.toLowerCase() !== host.toLowerCase()) {
    return { refused: `an absolute-form target for another host than the request's Host (${JSON.stringify(authority)})` };
  }
  return { target: rest === '' || rest.startsWith('?') ? `/${rest}` : rest };
}

/**
 * The canonical path and the query (without "?") of a request target, or the reason it is
 * refused. `host` is the request's Host header, against which an absolute-form target is checked.
 */
export function canonicalTarget(rawTarget: string, host: string | undefined): CanonicalTarget {
  const origin = originForm(rawTarget, host);
  if ('refused' in origin) return origin;
  const queryStart = origin.target.indexOf('?');
  const rawPath = queryStart < 0 ? origin.target : origin.target.slice(0, queryStart);
  const query = queryStart < 0 ? '' : origin.target.slice(queryStart + 1);
  if (!QUERY_TEXT.test(query)) return { refused: 'a query with a character RFC 3986 does not allow there (a space, "#", "\\" or a control character)' };
  const path = canonicalPath(rawPath);
  if ('refused' in path) return path;
  return { path: path.path, query };
}

/** The target rebuilt from its canonical parts: what the gateway sets as the request's URL. */
export const targetOf = (canonical: { path: string; query: string }): string => (canonical.query === '' ? canonical.path : `${canonical.path}?${canonical.query}`);
