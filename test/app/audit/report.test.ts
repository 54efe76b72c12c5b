import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  AuditReport,
  buildReport,
  failingPacks,
  Finding,
  formatText,
  NIST_OPEN_REASONS,
  openReason,
  PACK_POLICIES,
  renderHtml,
} from '../../../lib/app/audit';
import { countColour, evaluateInPage, rowsWithColour, screenshot } from '../../support/browser';
import { REPO_ROOT } from '../../support/fleet';

const PASS_BANNER = '#dafbe1';
const FAIL_BANNER = '#ffebe9';

describe('buildReport / formatText / renderHtml', () => {
  const findings: Finding[] = [
    {
      pack: 'AwsSolutions',
      stack: 'orders-cell-eu-1',
      rule: 'AwsSolutions-IAM5[Resource::*]',
      resource: 'p/cell-eu-1/Cell/Role/Resource',
      description: 'wildcard',
      acknowledgement: { reason: 'ECR token <no ARN>', at: 'p/cell-eu-1/Cell/Role' },
    },
    {
      pack: 'AwsSolutions',
      stack: 'orders-cell-eu-2',
      rule: 'AwsSolutions-IAM5[Action::s3:*]',
      resource: 'p/cell-eu-2/Cell/Role/Resource',
      description: 'wildcard',
    },
    {
      pack: 'ControlTower',
      stack: 'orders-cell-eu-1',
      rule: 'CT.S3.PR.2',
      resource: 'p/cell-eu-1/Cell/Logs/Resource',
      description: 'logging',
      acknowledgement: { reason: 'log bucket', at: 'p/cell-eu-1/Cell/Logs' },
    },
    {
      pack: 'NIST.800.53.R5',
      stack: 'orders-cell-eu-1',
      rule: 'NIST.800.53.R5-IAMNoInlinePolicy',
      resource: 'p/cell-eu-1/Cell/Policy/Resource',
      description: 'inline',
    },
  ];
  const input = {
    app: 'orders',
    generatedAt: new Date('2026-11-30T12:00:00Z'),
    stacks: ['orders-cell-eu-1', 'orders-cell-eu-2'],
    policies: PACK_POLICIES,
    findings,
  };
  const report = buildReport(input);

  it('counts open and acknowledged findings per pack, per rule (finding ids folded) and per stack', () => {
    expect(report.packs.map((p) => [p.pack, p.open, p.acknowledged])).toEqual([
      ['AwsSolutions', 1, 1],
      ['CellIsolation', 0, 0],
      ['ControlTower', 0, 1],
      ['cfn-lint', 0, 0],
      ['NIST.800.53.R5', 1, 0],
    ]);
    expect(report.rules.find((r) => r.rule === 'AwsSolutions-IAM5')).toMatchObject({ open: 1, acknowledged: 1 });
    expect(report.byStack.filter((b) => b.pack === 'AwsSolutions')).toEqual(
      expect.arrayContaining([
        { stack: 'orders-cell-eu-1', pack: 'AwsSolutions', rule: 'AwsSolutions-IAM5', open: 0, acknowledged: 1 },
        { stack: 'orders-cell-eu-2', pack: 'AwsSolutions', rule: 'AwsSolutions-IAM5', open: 1, acknowledged: 0 },
      ]),
    );
  });

  it('fails on open findings of gating packs only (NIST is advisory)', () => {
    expect(failingPacks(report)).toEqual(['AwsSolutions']);
    expect(formatText(report)).toMatch(
      /Open findings that fail the audit:\n {2}AwsSolutions-IAM5\[Action::s3:\*\] on p\/cell-eu-2\/Cell\/Role\/Resource/,
    );
    expect(formatText(report)).not.toMatch(/IAMNoInlinePolicy on/);
  });

  it('says on the page why each open finding is open: the advisory reason, or that it fails the audit', () => {
    const html = renderHtml(report);
    const inline = NIST_OPEN_REASONS.find((r) => r.rules.includes('NIST.800.53.R5-IAMNoInlinePolicy'))!.why;
    expect(openReason(report, 'NIST.800.53.R5', 'NIST.800.53.R5-IAMNoInlinePolicy')).toBe(inline);
    const row = (rule: string) => html.split('\n').find((l) => l.includes(`<code>${rule}</code>`) && l.includes('<td class="why">'))!;
    expect(row('NIST.800.53.R5-IAMNoInlinePolicy')).toContain(`<td class="why">${inline.replace(/'/g, '&#39;')}</td>`);
    expect(row('AwsSolutions-IAM5')).toContain('<strong>Fails the audit</strong>');
    // An advisory rule nobody explained says so.
    const unexplained = buildReport({ ...input, findings: [{ ...findings[3], rule: 'NIST.800.53.R5-SomethingNew' }] });
    expect(renderHtml(unexplained)).toContain('<strong>No reason recorded</strong> for this advisory rule');
  });

  it('escapes everything it puts in the page', () => {
    const html = renderHtml(report);
    expect(html).toContain('ECR token &lt;no ARN&gt;');
    expect(html).not.toContain('<no ARN>');
  });
});

describe('npm run audit -- --json --report FILE.html (the example fleet)', () => {
  let dir: string;
  let report: AuditReport;
  let run: ReturnType<typeof spawnSync>;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-report-'));
    run = spawnSync(
      process.execPath,
      [path.join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/audit.ts', '--json', '--report', path.join(dir, 'audit.html')],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 900_000,
        maxBuffer: 256 * 1024 * 1024,
      },
    );
    report = JSON.parse(String(run.stdout)) as AuditReport;
  }, 900_000);
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('exits 0 with zero open AwsSolutions, CellIsolation and Control Tower findings, over every stack', () => {
    expect([
      run.status,
      String(run.stderr)
        .split('\n')
        .filter((l) => /Open findings/.test(l)),
    ]).toEqual([0, []]);
    const open = Object.fromEntries(report.packs.map((p) => [p.pack, p.open]));
    expect(open).toMatchObject({ AwsSolutions: 0, CellIsolation: 0, ControlTower: 0 });
    expect(report.packs.find((p) => p.pack === 'ControlTower')!.acknowledged).toBeGreaterThan(0);
    // The pipeline, its cross-region support stack, a router stack per region and every cell stack.
    expect(report.stacks).toEqual(
      expect.arrayContaining(['orders-pipeline', 'orders-router-eu-west-1', 'orders-router-us-east-1', 'orders-cell-canary-eu', 'orders-cell-us-4']),
    );
  });

  it('gives every acknowledged finding its reason and the construct path it was acknowledged on', () => {
    const acknowledged = report.findings.filter((f) => f.acknowledgement && f.pack !== 'cfn-lint');
    expect(acknowledged.length).toBeGreaterThan(100);
    for (const f of acknowledged) {
      expect(f.acknowledgement!.reason.length).toBeGreaterThan(20);
      expect(f.resource.startsWith(f.acknowledgement!.at)).toBe(true);
    }
  });

  it('runs cfn-lint over every template with no open finding, its findings acknowledged only by rule and resource type', () => {
    expect(report.packs.find((p) => p.pack === 'cfn-lint')).toMatchObject({ open: 0, enforcement: 'audit' });
    const lint = report.findings.filter((f) => f.pack === 'cfn-lint');
    expect(lint.length).toBeGreaterThan(0);
    // The known stale-schema finding on the routers' listeners, acknowledged; writtenTemplates (tested in
    // cfn-lint.test.ts) hands cfn-lint the nested link stacks too.
    expect(lint.some((f) => f.rule === 'E3002' && f.resource.endsWith('(AWS::ElasticLoadBalancingV2::Listener)'))).toBe(true);
    for (const f of lint) {
      const type = /\((AWS::[^)]+)\)$/.exec(f.resource)![1];
      expect(f.acknowledgement!.at).toBe(`${f.rule} on ${type} (lib/app/audit/cfn-lint.ts)`);
    }
  });

  it('has a recorded reason for every open advisory finding', () => {
    const advisory = new Set(report.packs.filter((p) => p.enforcement === 'advisory').map((p) => p.pack));
    const unexplained = report.findings.filter((f) => !f.acknowledgement && advisory.has(f.pack) && !openReason(report, f.pack, f.rule));
    expect([...new Set(unexplained.map((f) => f.rule))]).toEqual([]);
    expect(report.findings.some((f) => !f.acknowledgement && advisory.has(f.pack))).toBe(true);
  });

  it('fits a 1,400 px wide window, with the reasons for open findings on the page', () => {
    const page = evaluateInPage<{ scrollWidth: number; text: string; reasonCells: { right: number; height: number }[] }>(
      path.join(dir, 'audit.html'),
      `({
      scrollWidth: document.documentElement.scrollWidth,
      text: document.body.innerText,
      reasonCells: [...document.querySelectorAll('td.why')].map((td) => ({ right: td.getBoundingClientRect().right, height: td.getBoundingClientRect().height })),
    })`,
    );
    expect(page.scrollWidth).toBeLessThanOrEqual(1400);
    for (const reason of NIST_OPEN_REASONS) expect(page.text).toContain(reason.why.replace(/`/g, ''));
    expect(page.reasonCells.length).toBeGreaterThan(0);
    expect(page.reasonCells.every((c) => c.right <= 1400 && c.height > 0)).toBe(true);
  });

  it('renders a page a browser shows: a pass banner above the summary table', () => {
    const picture = screenshot(path.join(dir, 'audit.html'), path.join(dir, 'audit.png'));
    if (process.env.KEEP_AUDIT_SCREENSHOT) fs.copyFileSync(path.join(dir, 'audit.png'), process.env.KEEP_AUDIT_SCREENSHOT);
    expect([picture.width, picture.height]).toEqual([1400, 1100]);
    const banner = rowsWithColour(picture, PASS_BANNER);
    // A banner of several lines of pixels in the upper part of the page, and no failure colour
    // anywhere on the first screen (NIST's open findings are advisory: amber, not red).
    expect(banner.length).toBeGreaterThan(15);
    expect(banner[0]).toBeLessThan(300);
    expect(countColour(picture, FAIL_BANNER)).toBe(0);
    // Text and tables: many dark pixels and the header background of the tables.
    expect(countColour(picture, '#f6f8fa')).toBeGreaterThan(5000);
    expect(countColour(picture, '#1b1f24')).toBeGreaterThan(2000);
  });
});
