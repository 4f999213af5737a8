// One task's page: InspectOperatorTask rendered (overview, cancellation and outcome, timeline,
// artifacts, messages, turns, step journal, sub-agent tree, push deliveries and dead letters),
// kept live by SubscribeToOperatorTask (each event is added to the timeline and the page is read
// again), with the operator's actions: cancel the task, replay a dead-lettered delivery.
import { agentRestBase, api, el, partsText, readEvents, requireSignIn, setLive, showError, stateBadge, stateLabel, TERMINAL, when } from './console.js';

const taskId = new URLSearchParams(location.search).get('id') ?? '';
const byId = (id) => document.getElementById(id);
let view;
let refreshTimer;
let lastEventId;

const dl = (pairs) => pairs.filter(([, value]) => value !== undefined && value !== '').flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]);
const table = (head, bodyRows) => (bodyRows.length === 0 ? el('p', { class: 'empty' }, 'None.') : el('table', {}, el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))), el('tbody', {}, bodyRows)));

/** What one event of the timeline says, in a line. */
function describe(event) {
  if (event.task) return ['created', stateLabel(event.task.status?.state), partsText(event.task.history?.[0]?.parts)];
  if (event.statusUpdate) {
    const { status, metadata } = event.statusUpdate;
    const stage = metadata?.cancellation?.stage;
    const by = metadata?.cancellation?.requestedBy;
    const kind = stage ? `cancel ${stage}${by ? ` by ${by}` : ''}` : 'status';
    return [kind, stateLabel(status?.state), partsText(status?.message?.parts)];
  }
  if (event.artifactUpdate) {
    const { artifact, append, lastChunk } = event.artifactUpdate;
    return ['artifact', artifact?.name ?? artifact?.artifactId ?? '', `${partsText(artifact?.parts)}${append ? ' (appended)' : ''}${lastChunk ? ' (last chunk)' : ''}`];
  }
  if (event.message) return ['message', stateLabel(event.message.role), partsText(event.message.parts)];
  return ['event', '', JSON.stringify(event)];
}

function timelineItem(entry) {
  const [kind, state, text] = describe(entry.event);
  return el('li', { dataset: { eventId: entry.id, kind: kind.split(' ')[0] } }, el('time', {}, when(entry.at)), el('span', { class: 'kind' }, kind), state ? el('span', { class: 'what' }, state) : '', text ? el('span', { class: 'text' }, text) : '');
}

function subAgentList(nodes) {
  return el(
    'ul',
    { class: 'tree' },
    nodes.map((node) =>
      el(
        'li',
        {},
        el('a', { href: `task?id=${encodeURIComponent(node.taskId)}`, class: 'mono' }, node.taskId),
        ` ${node.role}${node.kind === 'review' ? ' (reviewer)' : ''}: assignment ${node.assignmentState}, task `,
        node.state === undefined ? 'gone' : stateBadge(node.state),
        node.children.length > 0 ? subAgentList(node.children) : '',
      ),
    ),
  );
}

/** The outcome (invariant 8) in words: verified and how, or why not. */
function verificationText(outcome, state) {
  if (outcome === undefined) return TERMINAL.has(state) ? 'no verification asked' : 'pending';
  const method = String(outcome.method ?? '');
  if (method.startsWith('none')) return `not verified${method.includes(':') ? `: ${method.slice(method.indexOf(':') + 1).trim()}` : ''}`;
  return `${outcome.verified ? 'verified' : 'not verified'}${method ? ` by ${method}` : ''}`;
}

function render() {
  const { task, inspection: t, timeline, subAgents, deadLetters } = view;
  const state = task.status.state;
  byId('task-id').textContent = task.id;
  byId('task-state').replaceChildren(stateBadge(state));
  document.title = `Task ${task.id} · a2a-gateway console`;
  byId('cancel').hidden = TERMINAL.has(state);
  if (TERMINAL.has(state)) byId('cancel-confirm').hidden = true;

  byId('overview').replaceChildren(
    ...dl([
      ['Agent', t.agent],
      ['Owner', `${t.subject}${t.tenant ? ` (tenant ${t.tenant})` : ''}`],
      ['Context', t.contextId],
      ['Created', when(t.createdAt)],
      ['Updated', when(t.updatedAt)],
      ['Finished', t.finishedAt ? when(t.finishedAt) : undefined],
      ['Versions', t.versions ? `gateway ${t.versions.gateway}, adapter ${t.versions.adapter}, card ${t.versions.card}` : undefined],
      ['Lease', t.lease.holder === undefined ? `free (generation ${t.lease.generation})` : `held by ${t.lease.holder}, ${t.lease.expiresInMs} ms left (generation ${t.lease.generation})`],
      ['Current turn', `turn ${t.currentTurn.turn}: attempts ${t.currentTurn.attempts}, handed back ${t.currentTurn.handBacks}, budget spent ${t.currentTurn.budgetSpent}`],
      ['History', `${t.historyMessages} messages, ${t.queuedMessages} queued for the next turn`],
      ['Replay buffer', `${t.events.count} events`],
      ['Expires', t.expiresInSeconds === undefined ? 'never (still open)' : `in ${t.expiresInSeconds} s`],
      ['Coordinator', t.coordinator ? `${t.coordinator.taskId} (role ${t.coordinator.role}${t.coordinator.readOnly ? ', read-only' : ''})` : undefined],
    ]),
  );
  const c = t.cancellation;
  byId('outcome').replaceChildren(
    ...dl([
      ['Cancel requested', c.requestedAt ? `${when(c.requestedAt)}${c.requestedBy ? ` by ${c.requestedBy}` : ' by the owner'}` : 'not requested'],
      ['Acknowledged', c.acknowledgedAt ? when(c.acknowledgedAt) : undefined],
      ['Stopped', c.stoppedAt ? when(c.stoppedAt) : undefined],
      ['Cancel outcome', c.outcome ? stateLabel(c.outcome) : undefined],
      ['Verification', verificationText(t.outcome, state)],
      ['Evidence', t.outcome?.evidence === undefined ? undefined : JSON.stringify(t.outcome.evidence)],
    ]),
  );

  const items = timeline.entries.map(timelineItem);
  byId('timeline').replaceChildren(...items);
  byId('timeline-note').textContent = timeline.truncated ? `newest ${timeline.entries.length} events` : `${timeline.entries.length} events`;
  lastEventId = timeline.entries.at(-1)?.id ?? lastEventId;

  byId('artifacts').replaceChildren(
    (task.artifacts ?? []).length === 0 ? el('p', { class: 'empty' }, 'None.') : el('ul', {}, task.artifacts.map((a) => el('li', {}, el('strong', {}, a.name ?? a.artifactId), el('pre', {}, partsText(a.parts))))),
  );
  byId('messages').replaceChildren(
    (task.history ?? []).length === 0 ? el('p', { class: 'empty' }, 'None.') : el('ol', { class: 'messages' }, task.history.map((m) => el('li', { dataset: { role: m.role } }, el('span', { class: 'kind' }, stateLabel(m.role)), el('pre', {}, partsText(m.parts))))),
  );
  byId('turns').replaceChildren(
    table(
      ['Turn', 'Outcome', 'Attempts', 'Worker', 'Adapter', 'Started', 'Finished', 'Budget', 'Notes'],
      t.turns.map((turn) =>
        el(
          'tr',
          {},
          el('td', {}, turn.turn),
          el('td', {}, turn.outcome ? stateLabel(turn.outcome) : 'open'),
          el('td', {}, `${turn.attempts ?? 0}${turn.handBacks ? ` (+${turn.handBacks} handed back)` : ''}`),
          el('td', { class: 'mono small' }, turn.workerId ?? '–'),
          el('td', {}, turn.adapter ?? '–'),
          el('td', {}, turn.startedAtMs ? when(new Date(turn.startedAtMs).toISOString()) : '–'),
          el('td', {}, turn.finishedAtMs ? when(new Date(turn.finishedAtMs).toISOString()) : '–'),
          el('td', {}, turn.budgetSpent === undefined && turn.budgetLimit === undefined ? '–' : `${turn.budgetSpent ?? 0}${turn.budgetLimit === undefined ? '' : ` of ${turn.budgetLimit}`}`),
          el('td', {}, [turn.reason, ...(turn.steps ?? []).map((s) => `${s.name} (attempt ${s.attempt})`)].filter(Boolean).join('; ')),
        ),
      ),
    ),
  );
  byId('journal').replaceChildren(
    table(
      ['Step', 'State', 'Attempt', 'Idempotency key', 'Reference'],
      t.journal.map((step) =>
        el(
          'tr',
          { class: step.unknown ? 'unknown' : '' },
          el('td', {}, `${step.turn}:${step.name}`),
          el('td', {}, step.unknown ? `UNKNOWN outcome${step.surfacedToAttempt ? `, handed to attempt ${step.surfacedToAttempt}` : ''}` : step.state),
          el('td', {}, step.attempt),
          el('td', { class: 'mono small' }, step.idempotencyKey),
          el('td', { class: 'mono small' }, step.reference ?? ''),
        ),
      ),
    ),
  );
  byId('subagents').replaceChildren(
    subAgents.children.length === 0 ? el('p', { class: 'empty' }, t.coordinator ? `A sub-agent of ${t.coordinator.taskId}; it delegated nothing.` : 'None.') : subAgentList(subAgents.children),
    subAgents.truncated ? el('p', { class: 'note' }, 'The tree goes on below what is shown.') : '',
  );
  byId('push').replaceChildren(
    table(
      ['Config', 'URL', 'Delivered up to', 'In flight', 'State'],
      t.pushDeliveries.map((d) => el('tr', {}, el('td', {}, d.configId), el('td', { class: 'mono small' }, d.url), el('td', { class: 'mono small' }, d.settledEventId || '–'), el('td', { class: 'mono small' }, d.inflightEventId || '–'), el('td', {}, d.disabled ? 'disabled (410)' : 'active'))),
    ),
  );
  byId('dead-letters').replaceChildren(
    deadLetters.length === 0
      ? ''
      : el(
          'div',
          {},
          el('h3', {}, 'Dead letters'),
          table(
            ['Delivery', 'Event', 'Attempts', 'Last error', 'Dead at', ''],
            deadLetters.map((letter) =>
              el(
                'tr',
                { dataset: { deadLetter: letter.id } },
                el('td', { class: 'mono small' }, letter.id),
                el('td', { class: 'mono small' }, letter.eventId),
                el('td', {}, `${letter.attempts}${letter.replays ? `, replayed ${letter.replays}×` : ''}`),
                el('td', {}, `${letter.lastError}${letter.lastStatus ? ` (HTTP ${letter.lastStatus})` : ''}`),
                el('td', {}, when(letter.deadAt)),
                el('td', {}, el('button', { type: 'button', class: 'replay', onclick: () => void replay(letter.id) }, 'Replay')),
              ),
            ),
          ),
        ),
  );
}

async function refresh() {
  try {
    view = await api(`/operator/tasks/${encodeURIComponent(taskId)}`);
    render();
    showError('');
  } catch (error) {
    showError(error.status === 404 ? `Task ${taskId} was not found: it never existed, or it expired.` : `Could not read task ${taskId}: ${error.message}`);
  }
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => void refresh(), 200);
}

/** Follows the task live until it is terminal; each event shows at once and the page is read again. */
async function follow() {
  for (let delayMs = 1000; view !== undefined && !TERMINAL.has(view.task.status.state); delayMs = Math.min(delayMs * 2, 30_000)) {
    setLive('connecting');
    let ended = false;
    try {
      await readEvents(`/operator/tasks/${encodeURIComponent(taskId)}:subscribe`, {
        lastEventId,
        onEvent: ({ data, id, event }) => {
          setLive('on');
          delayMs = 1000;
          if (event === 'error') return;
          if (id) lastEventId = id;
          const parsed = JSON.parse(data);
          const state = parsed.statusUpdate?.status?.state ?? parsed.task?.status?.state;
          if (parsed.task === undefined) byId('timeline').append(timelineItem({ id, at: new Date(Number(String(id).split('-')[0]) || Date.now()).toISOString(), event: parsed }));
          if (state !== undefined) byId('task-state').replaceChildren(stateBadge(state));
          if (state !== undefined && TERMINAL.has(state)) ended = true;
          scheduleRefresh();
        },
      });
    } catch (error) {
      if (error.status === 401) return;
      if (error.status === 400) ended = true; // already terminal: nothing to subscribe to
    }
    if (ended) break;
    setLive('off');
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
  setLive('off');
  await refresh();
}

async function replay(id) {
  try {
    const result = await api(`/push/deadLetters/${encodeURIComponent(id)}:replay`, { method: 'POST', base: agentRestBase(view.inspection.agent) });
    byId('action-note').textContent = `Dead letter ${id} queued for replay #${result.replay}.`;
    // Delivered, it leaves the list; read the task again until it has (or for a while).
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await refresh();
      if (!view.deadLetters.some((letter) => letter.id === id)) {
        byId('action-note').textContent = `Dead letter ${id} was replayed and delivered.`;
        return;
      }
    }
  } catch (error) {
    showError(`Could not replay ${id}: ${error.message}`);
  }
}

byId('cancel').addEventListener('click', () => {
  byId('cancel').hidden = true;
  byId('cancel-confirm').hidden = false;
});
byId('cancel-confirm').addEventListener('click', async () => {
  byId('cancel-confirm').disabled = true;
  byId('action-note').textContent = 'Canceling…';
  try {
    const task = await api(`/operator/tasks/${encodeURIComponent(taskId)}:cancel`, { method: 'POST' });
    byId('action-note').textContent = `Canceled: the task is ${stateLabel(task.status.state)}; recorded as done by you.`;
  } catch (error) {
    byId('action-note').textContent = '';
    showError(`Could not cancel: ${error.message}`);
  } finally {
    byId('cancel-confirm').disabled = false;
    byId('cancel-confirm').hidden = true;
    await refresh();
  }
});

void requireSignIn(async () => {
  if (taskId === '') {
    showError('No task id: open a task from the list.');
    return;
  }
  await refresh();
  void follow();
});
