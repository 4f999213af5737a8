// The operator console at /console/: server-rendered pages and a few hand-written scripts, all
// served from here (no CDN, works offline). The pages hold no data: every task, list and
// action comes from the operator operations (a2a:operator to look, a2a:admin to act, each
// within the operator's tenant unless it holds a2a:platform) that the scripts call with the
// operator's bearer token, kept in the tab's sessionStorage and sent as a header, never in a
// URL or a cookie, so a cross-site request carries no credential (no CSRF) and nothing lands
// in a log. A strict Content-Security-Policy allows only these scripts.
import { readFileSync } from 'node:fs';
import type { Env, Hono } from 'hono';
import { renderListPage, renderTaskPage } from './pages.ts';

export const CONSOLE_PATH = '/console';

const ASSET_TYPES: Record<string, string> = {
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'list.js': 'text/javascript; charset=utf-8',
  'task.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/** Read once at start: the assets ship with the gateway. */
const ASSETS = new Map(Object.keys(ASSET_TYPES).map((name) => [name, readFileSync(new URL(`./assets/${name}`, import.meta.url))]));

/** Headers of every console response: only this origin's scripts, styles and requests; no framing; no referrer. */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

function html(body: string): Response {
  return new Response(body, { status: 200, headers: { ...CONSOLE_SECURITY_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' } });
}

export function registerConsoleRoutes<E extends Env>(app: Hono<E>): void {
  // Relative, so it also holds behind a proxy that serves the gateway below a path.
  app.get(CONSOLE_PATH, (c) => c.redirect('console/', 301));
  app.get(`${CONSOLE_PATH}/`, () => html(renderListPage()));
  app.get(`${CONSOLE_PATH}/task`, () => html(renderTaskPage()));
  app.get(`${CONSOLE_PATH}/assets/:name`, (c) => {
    const name = c.req.param('name');
    const body = ASSETS.get(name);
    if (body === undefined) return c.json({ error: { code: 404, status: 'NOT_FOUND', message: `The console has no asset "${name}".`, details: [] } }, 404);
    return new Response(body, { status: 200, headers: { ...CONSOLE_SECURITY_HEADERS, 'Content-Type': ASSET_TYPES[name] as string, 'Cache-Control': 'no-cache' } });
  });
}
