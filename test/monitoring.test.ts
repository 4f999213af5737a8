// deploy/monitoring (the Grafana dashboard, the Prometheus alert rules) and the worker HPA's
// adapter rule name only series a gateway and worker export: each metric they query is declared
// in a live /metrics, and each label they select on is one that metric carries.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const MONITORING_DIR = join(ROOT, 'deploy', 'monitoring');
/** Series Prometheus makes itself, not the gateway. */
const PROMETHEUS_OWN = new Set(['up']);
/** What a PromQL selector says: the metric and the labels it matches on. */
interface Selector {
  source: string;
  metric: string;
  labels: string[];
}

function dashboardQueries(): { source: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(join(MONITORING_DIR, 'grafana-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
  return dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ source: `dashboard panel "${panel.title}"`, expr: target.expr })));
}

function alertQueries(): { source: string; expr: string }[] {
  const rules = parse(readFileSync(join(MONITORING_DIR, 'alerts.yaml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
  return rules.groups.flatMap((group) => group.rules.map((rule) => ({ source: `alert ${rule.alert}`, expr: rule.expr })));
}

function hpaQueries(): { source: string; expr: string }[] {
  const text = readFileSync(join(ROOT, 'deploy', 'kubernetes', 'worker-hpa.yaml'), 'utf8');
  return [...text.matchAll(/(?:seriesQuery|metricsQuery): '(.+)'/g)].map((match) => ({ source: 'worker-hpa.yaml adapter rule', expr: (match[1] as string).replace(/,?<<\.LabelMatchers>>/g, '') }));
}

/** The metric selectors in a PromQL expression (names of the gateway's families; `up`). */
function selectorsOf(source: string, expr: string): Selector[] {
  const selectors: Selector[] = [];
  for (const match of expr.matchAll(/\b((?:a2a|nodejs|process)_[a-z0-9_]+|up)\b(\{[^}]*\})?/g)) {
    const labels = [...(match[2] ?? '').matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)].map((label) => label[1] as string);
    selectors.push({ source, metric: match[1] as string, labels });
  }
  return selectors;
}

let gw: TestGateway;
let exposition = '';

beforeAll(async () => {
  gw = await startTestGateway({ name: 'monitoring' });
  // A task through gateway and worker, so labelled series have samples to show their labels.
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('hello monitoring') });
  expect((body.result as { task: { status: { state: string } } }).task.status.state).toBe('TASK_STATE_COMPLETED');
  exposition = await (await fetch(`${gw.gateway.url}/metrics`)).text();
});
afterAll(async () => {
  await gw?.close();
});

/** The family a sample name belongs to (a histogram's _bucket, _sum and _count are its family's). */
function families(): Map<string, string> {
  const declared = new Map<string, string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) declared.set(name as string, type as string);
  return declared;
}

function familyOf(metric: string, declared: Map<string, string>): string | undefined {
  if (declared.has(metric)) return metric;
  const base = metric.replace(/_(bucket|sum|count)$/, '');
  return declared.get(base) === 'histogram' || declared.get(base) === 'summary' ? base : undefined;
}

/** Label names the family's samples carry (none when it has no sample yet). */
function labelsOf(family: string): Set<string> {
  const labels = new Set<string>();
  for (const [, name, body] of exposition.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/gm)) {
    if (name !== family && name?.replace(/_(bucket|sum|count)$/, '') !== family) continue;
    for (const [, label] of (body as string).matchAll(/([a-zA-Z_]+)="/g)) labels.add(label as string);
  }
  return labels;
}

describe('the dashboard, the alert rules and the HPA rule', () => {
  const selectors = [...dashboardQueries(), ...alertQueries(), ...hpaQueries()].flatMap(({ source, expr }) => selectorsOf(source, expr));

  it('query something: every panel and every rule names at least one series', () => {
    for (const { source, expr } of [...dashboardQueries(), ...alertQueries(), ...hpaQueries()]) expect(selectorsOf(source, expr).length, `${source}: ${expr}`).toBeGreaterThan(0);
    expect(new Set(selectors.map((selector) => selector.metric)).size).toBeGreaterThanOrEqual(12);
  });

  it('name only metrics a live /metrics declares', () => {
    const declared = families();
    const missing = selectors.filter((selector) => !PROMETHEUS_OWN.has(selector.metric) && familyOf(selector.metric, declared) === undefined).map((selector) => `${selector.source}: ${selector.metric}`);
    expect(missing).toEqual([]);
  });

  it('select only on labels those metrics carry (job and instance are Prometheus\' own)', () => {
    const declared = families();
    const wrong: string[] = [];
    for (const selector of selectors) {
      const family = familyOf(selector.metric, declared);
      if (family === undefined) continue;
      const carried = labelsOf(family);
      // A family with no sample yet (a push or takeover counter) cannot show its labels here.
      if (carried.size === 0) continue;
      for (const label of selector.labels) if (!['job', 'instance'].includes(label) && !carried.has(label)) wrong.push(`${selector.source}: ${selector.metric}{${label}}`);
    }
    expect(wrong).toEqual([]);
  });

  it('are documented in docs/operations.md', () => {
    const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    expect(operations).toContain('deploy/monitoring/grafana-dashboard.json');
    expect(operations).toContain('deploy/monitoring/alerts.yaml');
    for (const { source } of alertQueries()) expect(operations, source).toContain(source.replace('alert ', '`') + '`');
  });
});
