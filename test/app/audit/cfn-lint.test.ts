import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CFN_LINT_ACKNOWLEDGED, cfnLintFindings, writtenTemplates } from '../../../lib/app/audit';

/** Real cfn-lint (installed on these machines) over small templates. */
describe('cfn-lint findings, acknowledged only by rule and resource type', () => {
  let dir: string;
  const write = (name: string, resources: Record<string, unknown>) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify({ Resources: resources }));
    return file;
  };
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfn-lint-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('acknowledges the stale-schema Tags finding on a type it names, and leaves the same finding on another type open', () => {
    const tags = [{ Key: 'cell', Value: 'eu-1' }];
    const file = write('a.template.json', {
      Dashboard: { Type: 'AWS::CloudWatch::Dashboard', Properties: { DashboardBody: '{"widgets":[]}', Tags: tags } },
      Bucket: { Type: 'AWS::S3::Bucket', Properties: { Colour: 'red' } },
    });
    const findings = cfnLintFindings([file]);
    const dashboard = findings.find((f) => f.resource.startsWith('Resources/Dashboard'));
    expect(dashboard).toMatchObject({ pack: 'cfn-lint', rule: 'E3002', stack: 'a', resource: 'Resources/Dashboard (AWS::CloudWatch::Dashboard)' });
    expect(dashboard!.acknowledgement!.at).toBe('E3002 on AWS::CloudWatch::Dashboard (lib/app/audit/cfn-lint.ts)');
    const bucket = findings.find((f) => f.resource.startsWith('Resources/Bucket'));
    expect(bucket).toMatchObject({ rule: 'E3002', description: expect.stringContaining("'Colour' was unexpected") });
    expect(bucket!.acknowledgement).toBeUndefined();
  });

  it('never acknowledges a rule for every type', () => {
    for (const a of CFN_LINT_ACKNOWLEDGED) {
      expect(a.resourceType).toMatch(/^AWS::\w+::\w+$/);
      expect(a.reason.length).toBeGreaterThan(40);
    }
  });

  it('finds every written template, nested ones and stage assemblies included, and says when cfn-lint cannot run', () => {
    fs.mkdirSync(path.join(dir, 'assembly-x'));
    fs.mkdirSync(path.join(dir, 'asset.abc'));
    fs.writeFileSync(path.join(dir, 'assembly-x', 'b.nested.template.json'), '{}');
    fs.writeFileSync(path.join(dir, 'asset.abc', 'c.template.json'), '{}');
    expect(writtenTemplates(dir).map((f) => path.relative(dir, f))).toEqual(['a.template.json', 'assembly-x/b.nested.template.json']);
    expect(() => cfnLintFindings([path.join(dir, 'a.template.json')], { command: 'no-such-cfn-lint' })).toThrow(
      /^cfn-lint could not run .*; install it with `pip install cfn-lint`$/,
    );
  });
});
