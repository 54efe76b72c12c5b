import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import { controlId, ControlTowerChecks, controlTowerFindings } from '../../../lib/app/audit';
import { cellStackPropsOf } from '../../../lib/app';
import { CellStack } from '../../../lib/constructs/cell';
import { resolve, validInput } from '../../support/fleet';

describe('ControlTowerChecks', () => {
  let dir: string;
  let checks: ControlTowerChecks;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-test-'));
    checks = new ControlTowerChecks();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const template = (name: string, resources: Record<string, unknown>) => {
    const file = path.join(dir, `${name}.template.json`);
    fs.writeFileSync(file, JSON.stringify({ Resources: resources }));
    return file;
  };

  it('runs the bundled cfn-guard binary and names findings by control', () => {
    const file = template('short', { Logs: { Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 30 } } });
    const violations = checks.checkTemplate(file);
    const retention = violations.find((v) => v.ruleName === 'CT.CLOUDWATCH.PR.2');
    expect(retention?.violatingResources.map((r) => r.resourceLogicalId)).toEqual(['Logs']);
    expect(retention?.description).toMatch(/retained for at least one year/);
  });

  it('passes a resource that meets the control, and runs no rule for types the template lacks', () => {
    const file = template('year', {
      Logs: { Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 365, KmsKeyId: 'arn:aws:kms:eu-west-1:111111111111:key/k' } },
    });
    expect(checks.checkTemplate(file)).toEqual([]);
    const other = template('none', { Topic: { Type: 'AWS::SNS::Topic', Properties: {} } });
    expect(checks.checkTemplate(other).map((v) => v.ruleName)).not.toContain('CT.CLOUDWATCH.PR.2');
  });

  it('reads the control id from a cfn-guard description', () => {
    expect(controlId('\n [CT.S3.PR.10]: Require ...')).toBe('CT.S3.PR.10');
    expect(controlId('no control here')).toBeUndefined();
  });

  it('matches findings to constructs and to their acknowledgment on the resource or an ancestor', () => {
    const outdir = path.join(dir, 'app');
    const app = new App({ outdir, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'Logs');
    new logs.LogGroup(stack, 'Open', { retention: logs.RetentionDays.ONE_MONTH });
    const acknowledged = new logs.LogGroup(stack, 'Acknowledged', { retention: logs.RetentionDays.ONE_MONTH });
    Validations.of(acknowledged).acknowledge({ id: 'ControlTower::CT.CLOUDWATCH.PR.2', reason: 'test: short-lived' });
    app.synth();
    const retention = controlTowerFindings(app, checks).filter((f) => f.rule === 'CT.CLOUDWATCH.PR.2');
    expect(retention).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ pack: 'ControlTower', stack: 'Logs', resource: 'Logs/Open/Resource', acknowledgement: undefined }),
        expect.objectContaining({
          resource: 'Logs/Acknowledged/Resource',
          acknowledgement: { reason: 'test: short-lived', at: 'Logs/Acknowledged' },
        }),
      ]),
    );
  });

  it('finds no HTTP listener to redirect on a cell with a certificate, and acknowledges it on one without', () => {
    const input = validInput();
    const cell = input.cells[0];
    // HTTPS cells need endpoint names under a public domain (a public CA issues no certificate for *.cells.internal).
    const fleet = resolve({
      ...input,
      router: { ...input.router, cellEndpointTemplate: '{scheme}://{cell}.cells.example.com' },
      cells: [{ ...cell, certificateArn: `arn:aws:acm:${cell.region}:${cell.account}:certificate/0000` }, ...input.cells.slice(1)],
    });
    const app = new App({ outdir: path.join(dir, 'cells'), builtinCloudFormationValidation: false });
    new CellStack(app, 'WithCertificate', cellStackPropsOf(fleet, fleet.cells[0]));
    new CellStack(app, 'WithoutCertificate', cellStackPropsOf(fleet, fleet.cells[1]));
    app.synth();
    const findings = controlTowerFindings(app, checks);
    const redirect = findings.filter((f) => f.rule === 'CT.ELASTICLOADBALANCING.PR.1');
    expect(redirect.map((f) => [f.resource, f.acknowledgement !== undefined])).toEqual([
      ['WithoutCertificate/Cell/Entry/LoadBalancer/Http/Resource', true],
    ]);
    // Every other Control Tower finding of a cell is fixed or acknowledged too.
    expect(findings.filter((f) => !f.acknowledgement)).toEqual([]);
  });
});
