// Shared by the console's pages: the operator's token (this tab's sessionStorage only), calls
// to the operator operations with it as a bearer header, Server-Sent Events read with fetch and
// a stream reader (EventSource cannot send headers, and a token must never ride in a URL), and
// DOM building that only ever sets text, never HTML.

const TOKEN_KEY = 'a2a-console-token';

/** Where the gateway is: the console lives at <base>/console/, also behind a proxy path. */
export const gatewayBase = location.pathname.replace(/\/console(\/.*)?$/, '');
/** The HTTP+JSON binding of the default agent (the operator operations are served there). */
export const restBase = `${gatewayBase}/a2a/rest`;
/** The HTTP+JSON binding of one agent (its dead letters are replayed there). */
export const agentRestBase = (agent) => `${gatewayBase}/agents/${encodeURIComponent(agent)}/a2a/rest`;

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? '',
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** An answer the gateway refused: its HTTP status and google.rpc.Status body. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function headers(extra = {}) {
  const h = { 'A2A-Version': '1.0', Accept: 'application/json', ...extra };
  const bearer = token.get();
  if (bearer !== '') h.Authorization = `Bearer ${bearer}`;
  return h;
}

/** Calls an operation of the HTTP+JSON binding; resolves with its JSON, rejects with ApiError. */
export async function api(path, { method = 'GET', base = restBase, query } = {}) {
  const url = new URL(`${base}${path}`, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== '') url.searchParams.set(name, value);
  const response = await fetch(url, { method, headers: headers(method === 'POST' ? { 'Content-Type': 'application/json' } : {}), body: method === 'POST' ? '{}' : undefined, credentials: 'omit', cache: 'no-store' });
  const text = await response.text();
  let body;
  try {
    body = text === '' ? {} : JSON.parse(text);
  } catch {
    body = { error: { message: text.slice(0, 200) } };
  }
  if (!response.ok) {
    if (response.status === 401) onSignedOut('The gateway refused the token (expired or not valid here). Sign in again.');
    throw new ApiError(response.status, body);
  }
  return body;
}

/**
 * Reads an SSE response of the binding: onEvent({ data, id, event }) per event. Resolves when
 * the stream ends (or `signal` aborts it); rejects with ApiError when it was refused.
 */
export async function readEvents(path, { signal, onEvent, lastEventId }) {
  const extra = { Accept: 'text/event-stream' };
  if (lastEventId) extra['Last-Event-ID'] = lastEventId;
  const response = await fetch(new URL(`${restBase}${path}`, location.origin), { headers: headers(extra), signal, credentials: 'omit', cache: 'no-store' });
  if (!response.ok) {
    let body = {};
    try {
      body = await response.json();
    } catch {
      // no body worth showing
    }
    if (response.status === 401) onSignedOut('The gateway refused the token (expired or not valid here). Sign in again.');
    throw new ApiError(response.status, body);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = { data: [], id: undefined, event: undefined };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (event.data.length > 0) onEvent({ data: event.data.join('\n'), id: event.id, event: event.event });
          event = { data: [], id: undefined, event: undefined };
          continue;
        }
        if (line.startsWith(':')) continue; // heartbeat comment
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') event.data.push(text);
        else if (field === 'id') event.id = text;
        else if (field === 'event') event.event = text;
      }
    }
  } catch (error) {
    if (signal?.aborted) return;
    throw error;
  } finally {
    reader.releaseLock();
  }
}

/** Builds an element; children are nodes or strings (set as text, never parsed as HTML). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'dataset') Object.assign(node.dataset, value);
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const stateLabel = (state) => String(state ?? '').replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, ' ');
export const stateBadge = (state) => el('span', { class: 'state', dataset: { state: stateLabel(state).replace(/ /g, '-') } }, stateLabel(state) || '–');
export const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export function when(iso) {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** Shows the live-updates indicator: 'on', 'connecting' or 'off'. */
export function setLive(state) {
  const live = document.getElementById('live');
  live.dataset.state = state;
  live.textContent = state === 'on' ? 'live' : state === 'connecting' ? 'connecting…' : 'offline';
}

export function showError(message) {
  const banner = document.getElementById('error');
  banner.textContent = message;
  banner.hidden = message === '';
}

/** The text of a message's or artifact's parts. */
export function partsText(parts) {
  return (parts ?? [])
    .map((part) => (part.text !== undefined ? part.text : part.data !== undefined ? JSON.stringify(part.data) : part.url ?? part.filename ?? `[${part.mediaType ?? 'part'}]`))
    .join('\n');
}

let signedIn = () => undefined;

function onSignedOut(message) {
  token.clear();
  document.getElementById('main').hidden = true;
  document.getElementById('session').hidden = true;
  document.getElementById('sign-in').hidden = false;
  document.getElementById('sign-in-error').textContent = message;
}

/** Who the token says the operator is (its payload is read for display only; the gateway verifies it). */
function subjectOf(bearer) {
  try {
    const payload = JSON.parse(atob(bearer.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
    return `${payload.sub ?? '?'}${payload.tenant ? ` (tenant ${payload.tenant})` : ''}`;
  } catch {
    return 'operator';
  }
}

/**
 * Runs `start` once the operator is signed in: with the stored token, or without one when the
 * gateway does not authenticate; otherwise after the sign-in form was sent with a token that
 * the operator listing accepts.
 */
export async function requireSignIn(start) {
  signedIn = () => {
    document.getElementById('sign-in').hidden = true;
    document.getElementById('main').hidden = false;
    document.getElementById('session').hidden = false;
    document.getElementById('whoami').textContent = token.get() === '' ? 'authentication off' : subjectOf(token.get());
    start();
  };
  document.getElementById('sign-out').addEventListener('click', () => {
    token.clear();
    location.reload();
  });
  document.getElementById('sign-in-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const field = document.getElementById('token');
    const candidate = field.value.trim().replace(/^Bearer\s+/i, '');
    const error = document.getElementById('sign-in-error');
    error.textContent = '';
    token.set(candidate);
    try {
      await api('/operator/tasks', { query: { pageSize: '1' } });
      field.value = '';
      signedIn();
    } catch (failure) {
      token.clear();
      error.textContent =
        failure.status === 403
          ? 'This token grants neither a2a:operator nor a2a:admin: the console is for operators. Mint one with --scope "a2a:admin a2a:platform".'
          : failure.status === 401
            ? 'The gateway refused this token (expired, or not signed by an issuer it trusts).'
            : `Could not sign in: ${failure.message}`;
    }
  });
  try {
    await api('/operator/tasks', { query: { pageSize: '1' } });
    signedIn();
  } catch {
    onSignedOut(token.get() === '' ? '' : 'Sign in again.');
    document.getElementById('sign-in-error').textContent = '';
  }
}
