import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { AwsSolutionsChecks, NIST80053R5Checks } from 'cdk-nag';
import { addFleet, addPipeline, cliSynthContext } from '../app';
import { Fleet } from '../fleet';
import { CellIsolationChecks } from '../isolation';
import { CFN_LINT, cfnLintFindings, writtenTemplates } from './cfn-lint';
import { CONTROL_TOWER } from './control-tower';
import { allStacks, controlTowerFindings, nagFindings, stackLabel } from './findings';
import { AuditReport, buildReport, PackPolicy } from './report';

/** Which pack is enforced where, and why (the decision in docs/audit.md, repeated in every report). */
export const PACK_POLICIES: readonly PackPolicy[] = [
  { pack: 'AwsSolutions', enforcement: 'synth', why: 'AWS baseline practices; every finding is fixed or acknowledged, so `cdk synth` fails on anything new.' },
  { pack: 'CellIsolation', enforcement: 'synth', why: 'The cell boundary itself (shared state, router logic, waves, bounds, cross-cell access); pure TypeScript, about 1.5 s on the example fleet.' },
  { pack: CONTROL_TOWER, enforcement: 'audit', why: 'The proactive controls a Control Tower landing zone enforces at deploy time; cfn-guard costs about 1 s per template, so it gates `npm run audit` (run by the pipeline before `cdk synth`), not every local synth.' },
  { pack: CFN_LINT, enforcement: 'audit', why: 'AWS\'s CloudFormation linter over every written template, nested stacks included: what CloudFormation would refuse or ignore. Known stale-schema findings are acknowledged by rule and resource type (lib/audit/cfn-lint.ts).' },
  { pack: 'NIST.800.53.R5', enforcement: 'advisory', why: 'A compliance mapping for auditors; reported, not enforced (see docs/audit.md for what stays open and why).' },
];

/**
 * Builds the same app `cdk synth` does (behind the pipeline when the fleet has one), synthesizes it
 * once into a temporary directory, and collects every pack's findings over every stack: the
 * pipeline, its support stacks, and the router and cell stacks inside its stages.
 */
export function runAudit(fleet: Fleet, options: { now?: Date } = {}): AuditReport {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-audit-'));
  try {
    const app = new App({ outdir, context: cliSynthContext() });
    if (fleet.pipeline) addPipeline(app, fleet, { audit: false });
    else addFleet(app, fleet, { audit: false });
    app.synth();
    const findings = [
      ...nagFindings(new AwsSolutionsChecks(), app),
      ...nagFindings(new CellIsolationChecks(undefined, { fleet }), app),
      ...controlTowerFindings(app),
      ...nagFindings(new NIST80053R5Checks(), app),
      ...cfnLintFindings(writtenTemplates(outdir)),
    ];
    return buildReport({
      app: fleet.app, generatedAt: options.now ?? new Date(), stacks: allStacks(app).map(stackLabel), policies: PACK_POLICIES, findings,
    });
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}
