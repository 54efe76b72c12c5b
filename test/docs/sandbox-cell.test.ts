/**
 * docs/constructs.md, "One cell in a sandbox account": the page's app (docs/examples/constructs-5.ts),
 * saved in the repository's root as the page says and run as `cdk deploy --app 'npx tsx …'` runs it,
 * synthesizes one cell stack into the named account and region with the AwsSolutions gate on, passes
 * cfn-lint, and stages the example's own workload directory as the cell's image.
 */
import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { cliSynthContext } from '../../lib/app';
import { CFN_LINT_ACKNOWLEDGED, cfnLintFindings } from '../../lib/app/audit';
import { REPO_ROOT } from '../support/fleet';

const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-cell-'));
let run: ReturnType<typeof spawnSync>;

beforeAll(() => {
  // Saved in the root, as the page says (its imports are relative to it), under a name of this run's own.
  const app = path.join(REPO_ROOT, `.sandbox-cell-${process.pid}.ts`);
  fs.copyFileSync(path.join(REPO_ROOT, 'docs', 'examples', 'constructs-5.ts'), app);
  try {
    run = spawnSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), [app], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: {
        ...process.env,
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify(cliSynthContext()),
        CDK_DEFAULT_ACCOUNT: '444455556666',
        CDK_DEFAULT_REGION: 'us-east-1',
        SANDBOX_AZ_IDS: 'use1-az1,use1-az2',
      },
      timeout: 5 * 60_000,
    });
  } finally {
    fs.rmSync(app, { force: true });
  }
}, 5 * 60_000);

afterAll(() => fs.rmSync(outdir, { recursive: true, force: true }));

it('synthesizes with the AwsSolutions gate on: one cell stack in the sandbox account and region', () => {
  expect([run.status, run.stderr]).toEqual([0, expect.any(String)]);
  const manifest = JSON.parse(fs.readFileSync(path.join(outdir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; environment?: string; properties?: { stackName?: string; terminationProtection?: boolean } }>;
  };
  const stacks = Object.values(manifest.artifacts).filter((a) => a.type === 'aws:cloudformation:stack');
  expect(stacks).toEqual([
    expect.objectContaining({ environment: 'aws://444455556666/us-east-1', properties: expect.objectContaining({ stackName: 'sandbox-cell-dev-1', terminationProtection: false }) }),
  ]);
  // The roles other accounts assume are for the sandbox itself: no other account's principal appears
  // (the regions' ELB log-delivery accounts, in a region map, are AWS's).
  const template = fs.readFileSync(path.join(outdir, 'sandbox-cell.template.json'), 'utf8');
  const ELB_LOG_DELIVERY_US_EAST_1 = '127311923021';
  const principals = new Set([...template.matchAll(/:iam::(\d{12}):/g)].map((m) => m[1]));
  principals.delete(ELB_LOG_DELIVERY_US_EAST_1);
  expect([...principals]).toEqual(['444455556666']);
  expect(template).toContain('use1-az1');
});

it("stages the example's own workload directory as the cell's image", () => {
  const assets = JSON.parse(fs.readFileSync(path.join(outdir, 'sandbox-cell.assets.json'), 'utf8')) as {
    dockerImages: Record<string, { source: { directory: string } }>;
  };
  const dirs = Object.values(assets.dockerImages).map((d) => path.join(outdir, d.source.directory));
  const workload = dirs.find((d) => fs.existsSync(path.join(d, 'server.js')));
  expect(workload).toBeDefined();
  expect(fs.readFileSync(path.join(workload!, 'Dockerfile'), 'utf8')).toContain('CMD ["node", "server.js"]');
});

it('passes cfn-lint, acknowledged findings only', () => {
  const findings = cfnLintFindings([path.join(outdir, 'sandbox-cell.template.json')]);
  expect(findings.filter((f) => !f.acknowledgement).map((f) => `${f.rule} ${f.resource}: ${f.description}`)).toEqual([]);
  expect(CFN_LINT_ACKNOWLEDGED.length).toBeGreaterThan(0);
});

it('the example workload answers its health check and names the tenant and cell, as the cell stack runs it', async () => {
  const server = spawn(process.execPath, ['server.js'], {
    cwd: path.join(REPO_ROOT, 'docs', 'examples', 'sandbox-service'),
    env: { ...process.env, PORT: '0', CELL_ID: 'dev-1', HEALTH_CHECK_PATH: '/healthz' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      server.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /listening on (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      server.on('exit', (code) => reject(new Error(`server.js exited with ${code} before listening`)));
    });
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const answer = await fetch(`http://127.0.0.1:${port}/v1/anything`, { headers: { 'x-tenant-id': 'tenant-7' } });
    expect([answer.status, answer.headers.get('x-cell'), await answer.json()]).toEqual([
      200,
      'dev-1',
      { tenant: 'tenant-7', cell: 'dev-1', method: 'GET', path: '/v1/anything' },
    ]);
    expect((await fetch(`http://127.0.0.1:${port}/v1/anything`)).status).toBe(400);
  } finally {
    server.kill('SIGTERM');
  }
});
