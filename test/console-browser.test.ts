// The operator console in a real headless Chromium (Debian's chromium, driven by playwright-core):
// sign in with a development-issuer operator token → the list of every owner's tasks → open a
// running task and watch it complete live (no reload) → cancel another as operator. Screenshots
// go to test-artifacts/console/ (ignored by git). Without /usr/bin/chromium this file fails,
// saying how to install it, unless A2A_SKIP_BROWSER_TESTS=1 says to skip it.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = process.env.A2A_SKIP_BROWSER_TESTS === '1';
const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/console/', import.meta.url));
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let gw: TestGateway;
let receiver: WebhookReceiver;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
const tokens = { operator: '', alice: '', bob: '' };

async function send(token: string, text: string, pushUrl?: string): Promise<{ id: string }> {
  const configuration = { returnImmediately: true, ...(pushUrl === undefined ? {} : { taskPushNotificationConfig: { id: 'hook', url: pushUrl } }) };
  const response = await fetch(gw.jsonRpcUrl, {
    method: 'POST',
    headers: { 'A2A-Version': '1.0', 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage(text), configuration } }),
  });
  const body = (await response.json()) as { result?: { task?: { id: string } } };
  if (body.result?.task === undefined) throw new Error(`SendMessage failed: ${JSON.stringify(body)}`);
  return body.result.task;
}

const shoot = (name: string): Promise<Buffer> => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

describe.skipIf(SKIP)('the operator console in headless Chromium', () => {
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing, so the console's browser test cannot run. Install it (apt-get install -y chromium; .ci/run does), or set A2A_SKIP_BROWSER_TESTS=1 to skip this file knowingly.`,
      );
    }
    await mkdir(ARTIFACTS, { recursive: true });
    // Authentication on, no issuer configured: the development issuer, as on a first `npm start`.
    gw = await startTestGateway({
      name: 'console-browser',
      config: {
        auth: { enabled: true },
        shutdownGraceMs: 0,
        console: { recentTasksFlushMs: 50 },
        push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 100, retryMaxDelayMs: 300, retryHorizonMs: 1_000, timeoutMs: 1_000 },
      },
      adapterOptions: { stepMs: 150 },
    });
    receiver = await startWebhookReceiver({ jwksUrl: `${gw.url}/.well-known/jwks.json` });
    const issuer = gw.gateway.devIssuer;
    if (issuer === undefined) throw new Error('the test gateway has no development issuer');
    // What npm start's banner prints: every operator view and action, of every tenant.
    tokens.operator = await issuer.mint({ sub: 'operator', scopes: ['a2a:admin', 'a2a:platform'] });
    tokens.alice = await issuer.mint({ sub: 'alice' });
    tokens.bob = await issuer.mint({ sub: 'bob', tenant: 'acme' });
    userDataDir = await mkdtemp(join(tmpdir(), 'a2a-console-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 } });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(30_000);
  });

  afterAll(async () => {
    await context?.close();
    await receiver?.close();
    if (userDataDir !== undefined) await rm(userDataDir, { recursive: true, force: true });
    await gw?.close();
  });

  it('signs in with an operator token, which stays out of the URL; a token without a2a:admin is refused', async () => {
    await page.goto(`${gw.url}/console/`);
    await expect.poll(() => page.locator('#sign-in').isVisible()).toBe(true);
    await shoot('01-sign-in');
    await page.fill('#token', tokens.alice);
    await page.click('#sign-in-form button[type=submit]');
    await expect.poll(() => page.locator('#sign-in-error').textContent()).toContain('a2a:admin');
    await page.fill('#token', tokens.operator);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#main').waitFor({ state: 'visible' });
    expect(await page.locator('#whoami').textContent()).toContain('operator');
    expect(page.url()).not.toContain(tokens.operator.slice(0, 20));
    // Evaluated in the page (as text: this project's TypeScript has no DOM types).
    expect(await page.evaluate("sessionStorage.getItem('a2a-console-token')")).toBe(tokens.operator);
    expect(await page.evaluate('document.cookie')).toBe('');
  });

  it("lists every owner's tasks, and a new one appears live", async () => {
    await send(tokens.alice, 'echo hello from alice');
    await send(tokens.bob, 'echo hello from bob');
    await page.locator('#live[data-state="on"]').waitFor();
    // Both owners' tasks arrive without a reload, from the watch stream.
    await expect.poll(() => page.locator('#task-rows tr').count(), { timeout: 20_000 }).toBe(2);
    const owners = await page.locator('#task-rows tr td:nth-child(4)').allTextContents();
    expect(owners.join(' ')).toMatch(/alice/);
    expect(owners.join(' ')).toMatch(/bob.*@acme/);
    await expect.poll(() => page.locator('#task-rows tr .state[data-state="completed"]').count(), { timeout: 20_000 }).toBe(2);
    // A filter the server applies: bob's tenant only.
    await page.fill('input[name=ownerTenant]', 'acme');
    await page.click('#filters button[type=submit]');
    await expect.poll(() => page.locator('#task-rows tr').count()).toBe(1);
    await page.click('#filters button[type=reset]');
    await expect.poll(() => page.locator('#task-rows tr').count()).toBe(2);
    await shoot('02-task-list');
  });

  it('opens a running task and watches it complete live', async () => {
    const running = await send(tokens.alice, 'long 25');
    const link = page.locator(`#task-${running.id} a`);
    await link.waitFor({ timeout: 20_000 });
    await link.click();
    await page.waitForURL(/\/console\/task\?id=/);
    await page.locator('#task-state .state[data-state="working"]').waitFor({ timeout: 20_000 });
    // Marks this document: still there at the end means nothing reloaded the page.
    await page.evaluate("window.consoleTestMarker = 'same document'");
    await expect.poll(() => page.locator('#timeline li').count()).toBeGreaterThan(2);
    await shoot('03-task-working');
    await page.locator('#task-state .state[data-state="completed"]').waitFor({ timeout: 30_000 });
    expect(await page.evaluate('window.consoleTestMarker')).toBe('same document');
    await expect.poll(() => page.locator('#timeline').textContent()).toContain('long job finished');
    await expect.poll(() => page.locator('#turns').textContent()).toContain('completed');
    expect(await page.locator('#cancel').isVisible()).toBe(false);
    await shoot('04-task-completed');
  });

  it('cancels another owner’s task as operator, and the page shows who did', async () => {
    const victim = await send(tokens.bob, 'long 1000');
    await page.goto(`${gw.url}/console/`);
    const link = page.locator(`#task-${victim.id} a`);
    await link.waitFor({ timeout: 20_000 });
    await link.click();
    await page.locator('#task-state .state[data-state="working"]').waitFor({ timeout: 20_000 });
    await page.click('#cancel');
    await page.click('#cancel-confirm');
    await page.locator('#task-state .state[data-state="canceled"]').waitFor({ timeout: 30_000 });
    await expect.poll(() => page.locator('#outcome').textContent()).toContain('by operator:');
    await expect.poll(() => page.locator('#timeline').textContent()).toContain('cancel requested by operator:');
    await shoot('05-task-canceled');
    // The owner sees it canceled.
    const owned = await fetch(`${gw.url}/a2a/rest/tasks/${victim.id}`, { headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${tokens.bob}` } });
    expect(((await owned.json()) as { status: { state: string } }).status.state).toBe('TASK_STATE_CANCELED');
  });

  it('replays a dead-lettered push delivery from the task page', async () => {
    // A receiver that refuses for good (400): the task's deliveries are given up on at once.
    receiver.behave({ status: 400, pathPrefix: '/hooks/console' });
    const task = await send(tokens.alice, 'echo pushed', `${receiver.url}/hooks/console`);
    await page.goto(`${gw.url}/console/task?id=${task.id}`);
    await page.locator('#task-state .state[data-state="completed"]').waitFor({ timeout: 20_000 });
    // Dead letters are read with the page: read it again until they are there.
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.locator('#task-id').filter({ hasText: task.id }).waitFor();
          return page.locator('#dead-letters tr[data-dead-letter]').count();
        },
        { timeout: 20_000, interval: 1_000 },
      )
      .toBeGreaterThan(0);
    await shoot('06-dead-letters');
    receiver.reset(); // the receiver takes deliveries again
    const first = page.locator('#dead-letters tr[data-dead-letter]').first();
    const letterId = await first.getAttribute('data-dead-letter');
    await first.locator('button.replay').click();
    await expect.poll(() => page.locator('#action-note').textContent(), { timeout: 25_000 }).toContain(`${letterId} was replayed and delivered`);
    expect(await page.locator(`#dead-letters tr[data-dead-letter="${letterId}"]`).count()).toBe(0);
    expect(receiver.deliveries.some((delivery) => delivery.webhookId === letterId && delivery.path.startsWith('/hooks/console'))).toBe(true);
  });
});
