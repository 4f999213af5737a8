// The console's two pages, rendered on the server: the layout, the sign-in form and the empty
// places the scripts fill with what the operator operations answer. No data is rendered here,
// so a page is the same for everyone and safe to serve without credentials.
import { TASK_STATES } from '../protocol/types.ts';

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] as string);

const stateLabel = (state: string): string => state.replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, ' ');

function layout(title: string, main: string, script: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · a2a-gateway console</title>
<link rel="icon" href="assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/console.css">
<script type="module" src="assets/${script}"></script>
</head>
<body>
<header class="bar">
  <a class="brand" href="./">a2a-gateway <span>operator console</span></a>
  <div class="session" id="session" hidden>
    <span id="whoami"></span>
    <span class="live" id="live" data-state="off">offline</span>
    <button type="button" id="sign-out" class="quiet">Sign out</button>
  </div>
</header>
<section id="sign-in" class="panel sign-in" hidden>
  <h1>Sign in</h1>
  <p>Paste an operator token: a bearer JWT with <code>a2a:operator</code> to look, or <code>a2a:admin</code> to cancel
  and replay too; with <code>a2a:platform</code> besides, it sees every tenant, else its own. On a first run,
  <code>npm start</code> prints one; <code>npm run -s token -- --sub you --scope "a2a:admin a2a:platform" --ttl 900</code> mints another.
  The token stays in this tab only (sessionStorage) and is sent as an <code>Authorization</code> header.</p>
  <form id="sign-in-form" autocomplete="off">
    <label for="token">Operator token</label>
    <textarea id="token" name="token" rows="4" spellcheck="false" required autocomplete="off"></textarea>
    <button type="submit">Sign in</button>
    <p class="error" id="sign-in-error" role="alert"></p>
  </form>
</section>
<main id="main" hidden>
${main}
</main>
<p class="error banner" id="error" role="alert" hidden></p>
</body>
</html>
`;
}

export function renderListPage(): string {
  const states = TASK_STATES.map((state) => `<option value="${state}">${escapeHtml(stateLabel(state))}</option>`)
    .join('');
  return layout(
    'Tasks',
    `<h1>Tasks <small>every owner, most recently changed first</small></h1>
<form id="filters" class="filters" autocomplete="off">
  <label>Agent <select name="agent" id="filter-agent"><option value="">any</option></select></label>
  <label>State <select name="state"><option value="">any</option>${states}</select></label>
  <label>Owner <input name="owner" placeholder="subject"></label>
  <label>Tenant <input name="ownerTenant" placeholder="any"></label>
  <label>Context <input name="contextId" placeholder="context id"></label>
  <label>Changed after <input name="changedAfter" type="datetime-local" step="1"></label>
  <label>Changed before <input name="changedBefore" type="datetime-local" step="1"></label>
  <button type="submit">Filter</button>
  <button type="reset" class="quiet">Clear</button>
</form>
<table class="tasks" id="tasks">
  <thead><tr><th>Task</th><th>State</th><th>Agent</th><th>Owner</th><th>Context</th><th>Changed</th><th>Created</th></tr></thead>
  <tbody id="task-rows"></tbody>
</table>
<p class="empty" id="empty" hidden>No task matches.</p>
<p class="more"><button type="button" id="more" hidden>More</button> <span id="page-note"></span></p>`,
    'list.js',
  );
}

export function renderTaskPage(): string {
  return layout(
    'Task',
    `<p><a href="./">← all tasks</a></p>
<h1>Task <code id="task-id"></code> <span class="state" id="task-state"></span></h1>
<div class="actions">
  <button type="button" id="cancel" class="danger" hidden>Cancel task</button>
  <button type="button" id="cancel-confirm" class="danger" hidden>Confirm: cancel this task as operator</button>
  <span id="action-note"></span>
</div>
<section class="grid">
  <div class="panel"><h2>Overview</h2><dl id="overview"></dl></div>
  <div class="panel"><h2>Cancellation and outcome</h2><dl id="outcome"></dl></div>
</section>
<section class="panel"><h2>Timeline <small id="timeline-note"></small></h2><ol class="timeline" id="timeline"></ol></section>
<section class="panel"><h2>Artifacts</h2><div id="artifacts"></div></section>
<section class="panel"><h2>Messages</h2><div id="messages"></div></section>
<section class="panel"><h2>Turns</h2><div id="turns"></div></section>
<section class="panel"><h2>Step journal</h2><div id="journal"></div></section>
<section class="panel"><h2>Sub-agents</h2><div id="subagents"></div></section>
<section class="panel"><h2>Push deliveries</h2><div id="push"></div><div id="dead-letters"></div></section>`,
    'task.js',
  );
}
