// The task list: every owner's tasks from ListOperatorTasks, filtered, paged, and kept up to
// date from WatchOperatorTasks (every task's events, live): a listed task's row changes in
// place; an event of a task not listed reloads the first page (debounced), since it may be new.
import { api, el, gatewayBase, readEvents, requireSignIn, setLive, showError, stateBadge, token, when } from './console.js';

const rows = document.getElementById('task-rows');
const filters = document.getElementById('filters');
const more = document.getElementById('more');
let nextPageToken = '';
let reloadTimer;

/** The filters as the operation takes them; datetime-local inputs are read as UTC. */
function query() {
  const form = new FormData(filters);
  const q = {};
  for (const [name, value] of form) {
    if (value === '') continue;
    q[name] = name === 'changedAfter' || name === 'changedBefore' ? `${value.length === 16 ? `${value}:00` : value}Z` : String(value);
  }
  return q;
}

function row(task) {
  return el(
    'tr',
    { id: `task-${task.id}`, dataset: { taskId: task.id } },
    el('td', {}, el('a', { href: `task?id=${encodeURIComponent(task.id)}`, class: 'mono' }, task.id), task.parentTaskId ? el('small', {}, ` sub-agent (${task.role ?? ''})`) : ''),
    el('td', { class: 'state-cell' }, stateBadge(task.state)),
    el('td', {}, task.agent),
    el('td', {}, task.owner, task.tenant ? el('small', {}, ` @${task.tenant}`) : ''),
    el('td', { class: 'mono small' }, task.contextId),
    el('td', { class: 'changed' }, when(task.changedAt)),
    el('td', {}, when(task.createdAt)),
  );
}

async function load({ append }) {
  try {
    const page = await api('/operator/tasks', { query: { ...query(), pageSize: '50', pageToken: append ? nextPageToken : undefined } });
    if (!append) rows.replaceChildren();
    for (const task of page.tasks) rows.append(row(task));
    nextPageToken = page.nextPageToken;
    more.hidden = nextPageToken === '';
    document.getElementById('empty').hidden = rows.children.length > 0 || nextPageToken !== '';
    document.getElementById('page-note').textContent = nextPageToken !== '' && page.tasks.length === 0 ? `looked at ${page.examined} tasks, none matched; more follow` : '';
    showError('');
  } catch (error) {
    showError(`Could not list tasks: ${error.message}`);
  }
}

let trailingTimer;

/**
 * Reads the first page again soon: at most one read per half second, however many events ask
 * (a busy task sends many), and once more a while after the last ask, since the index is
 * written a moment (console.recentTasksFlushMs) after the change that was announced.
 */
function scheduleReload() {
  clearTimeout(trailingTimer);
  trailingTimer = setTimeout(() => void load({ append: false }), 2000);
  if (reloadTimer !== undefined) return;
  reloadTimer = setTimeout(() => {
    reloadTimer = undefined;
    void load({ append: false });
  }, 500);
}

/** Applies one live event: the row of its task changes, or the list is read again. */
function apply(data) {
  let event;
  try {
    event = JSON.parse(data);
  } catch {
    return;
  }
  if (event.watchStarted !== undefined) {
    scheduleReload(); // whatever changed before the watch began is in this read
    return;
  }
  const taskId = event.statusUpdate?.taskId ?? event.task?.id ?? event.artifactUpdate?.taskId;
  const state = event.statusUpdate?.status?.state ?? event.task?.status?.state;
  const existing = taskId === undefined ? null : document.getElementById(`task-${taskId}`);
  if (existing === null) {
    scheduleReload();
    return;
  }
  const wanted = new FormData(filters).get('state');
  if (state !== undefined && wanted && wanted !== state) {
    scheduleReload(); // it no longer matches the filter
    return;
  }
  if (state !== undefined) existing.querySelector('.state-cell').replaceChildren(stateBadge(state));
  existing.querySelector('.changed').textContent = when(new Date().toISOString());
  existing.classList.remove('flash');
  void existing.offsetWidth; // restart the animation
  existing.classList.add('flash');
}

async function watch() {
  for (let delayMs = 1000; ; delayMs = Math.min(delayMs * 2, 30_000)) {
    setLive('connecting');
    try {
      await readEvents('/operator/tasks:watch', {
        onEvent: ({ data }) => {
          setLive('on');
          delayMs = 1000;
          apply(data);
        },
      });
    } catch (error) {
      if (error.status === 401) return;
      if (error.status === 403) {
        // Operators of a tenant get no every-task stream: the list refreshes itself instead.
        setLive('off');
        setInterval(() => void load({ append: false }), 5000);
        return;
      }
    }
    setLive('off');
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}

async function loadAgents() {
  try {
    const bearer = token.get();
    const response = await fetch(`${gatewayBase}/agents`, { headers: bearer === '' ? {} : { Authorization: `Bearer ${bearer}` }, credentials: 'omit' });
    if (!response.ok) return;
    const { agents } = await response.json();
    const select = document.getElementById('filter-agent');
    for (const agent of agents) select.append(el('option', { value: agent.name }, agent.name));
  } catch {
    // the filter stays free text: "any"
  }
}

filters.addEventListener('submit', (event) => {
  event.preventDefault();
  void load({ append: false });
});
filters.addEventListener('reset', () => setTimeout(() => void load({ append: false })));
more.addEventListener('click', () => void load({ append: true }));

void requireSignIn(() => {
  void loadAgents();
  void load({ append: false });
  void watch();
});
