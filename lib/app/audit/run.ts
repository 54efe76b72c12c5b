import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { AwsSolutionsChecks, NIST80053R5Checks } from 'cdk-nag';
import { CellIsolationChecks, CellIsolationChecksProps } from '../../constructs/isolation';
import { CFN_LINT, cfnLintFindings, writtenTemplates } from './cfn-lint';
import { CONTROL_TOWER } from './control-tower';
import { allStacks, controlTowerFindings, nagFindings, stackLabel } from './findings';
import { AuditReport, buildReport, OpenReason, PackPolicy } from './report';
import { Progress } from '../../domain/files';

const nist = (...rules: string[]) => rules.map((r) => `NIST.800.53.R5-${r}`);

/** Why NIST 800-53 rev 5 findings stay open on the example fleet, rule by rule (shown on the audit page). */
export const NIST_OPEN_REASONS: readonly OpenReason[] = [
  {
    rules: nist('ELBv2ACMCertificateRequired', 'ALBHttpToHttpsRedirection'),
    why: 'The example cells have no `certificateArn`: their traffic stays inside PrivateLink. Set a certificate per cell and these close.',
  },
  {
    rules: nist('IAMNoInlinePolicy'),
    why: 'CDK grants write least-privilege inline policies scoped to one role; turning them into managed policies adds nothing.',
  },
  {
    rules: nist('LambdaConcurrency', 'LambdaDLQ', 'LambdaInsideVPC'),
    why: 'Deploy-time custom-resource handlers of the router stacks (the mapping seed, the cell endpoint lookup): they run only during a deploy, CloudFormation retries them, and they call only AWS APIs.',
  },
  {
    rules: nist('CloudWatchLogGroupEncrypted'),
    why: "Router and pipeline log groups use CloudWatch Logs' default encryption (cells use their own KMS key); the same as Control Tower's CT.CLOUDWATCH.PR.3, acknowledged there.",
  },
  {
    rules: nist('S3BucketLoggingEnabled', 'S3BucketReplicationEnabled', 'S3BucketVersioningEnabled', 'S3DefaultEncryptionKMS'),
    why: "The mapping and move buckets (SSE-S3, one region each by design: each region's routers read their own) and the CodePipeline artifact and replication buckets, which CDK Pipelines owns.",
  },
  {
    rules: nist('VPCNoUnrestrictedRouteToIGW'),
    why: "The router VPCs' public subnets: the router's internet-facing load balancer and the NAT gateways live there.",
  },
  {
    rules: nist('RDSInBackupPlan'),
    why: 'Automated RDS and Aurora backups are on (7 to 14 days per cell shape); an AWS Backup plan per cell is not part of the example.',
  },
  {
    rules: nist('DynamoDBInBackupPlan'),
    why: "The example fleet's own idempotency-key table in each cell (`cellResources`): point-in-time recovery is on (35 days) and its keys expire after a day; an AWS Backup plan per cell is not part of the example.",
  },
  {
    rules: nist('RDSInstanceDeletionProtectionEnabled', 'ELBDeletionProtectionEnabled'),
    why: "Left out of the template on purpose: a resource that refuses deletion turns a failed first create into ROLLBACK_FAILED. The pipeline switches deletion protection on after a stage's first successful deploy (`lib/constructs/pipeline/protect.ts`, `lib/constructs/shared/deletion-protection-access.ts`).",
  },
  {
    rules: nist('CloudWatchAlarmAction'),
    why: "The cells' deployment gates (DeployErrorRate, DeployUnhealthyHosts): ECS and instance refresh read them and roll back; the same signal pages on-call through its raw alarm, which notifies the cell's topic.",
  },
];

/** Which pack is enforced where, and why (the decision in docs/audit.md, repeated in every report). */
export const PACK_POLICIES: readonly PackPolicy[] = [
  {
    pack: 'AwsSolutions',
    enforcement: 'synth',
    why: 'AWS baseline practices; every finding is fixed or acknowledged, so `cdk synth` fails on anything new.',
  },
  {
    pack: 'CellIsolation',
    enforcement: 'synth',
    why: 'The cell boundary itself (shared state, router logic, waves, bounds, cross-cell access); pure TypeScript, about 1.5 s on the example fleet.',
  },
  {
    pack: CONTROL_TOWER,
    enforcement: 'audit',
    why: 'The proactive controls a Control Tower landing zone enforces at deploy time; cfn-guard costs about 1 s per template, so it gates `npm run audit` (run by the pipeline before `cdk synth`), not every local synth.',
  },
  {
    pack: CFN_LINT,
    enforcement: 'audit',
    why: "AWS's CloudFormation linter over every written template, nested stacks included: what CloudFormation would refuse or ignore. Known stale-schema findings are acknowledged by rule and resource type (lib/app/audit/cfn-lint.ts).",
  },
  {
    pack: 'NIST.800.53.R5',
    enforcement: 'advisory',
    openReasons: NIST_OPEN_REASONS,
    why: 'A compliance mapping for auditors; reported, not enforced. Each rule left open says why next to it (Open findings).',
  },
];

/** What the audit runs over: the app `build` makes, the fleet's name and its cell-isolation checks' props. */
export interface AuditSubject {
  /** The fleet's name, for the report. */
  readonly app: string;
  /** Builds the app `cdk synth` builds, without its synth gate, into `outdir` (lib/app's `auditFleet`). */
  readonly build: (outdir: string) => App;
  readonly isolation: CellIsolationChecksProps;
}

/**
 * Synthesizes the subject's app once into a temporary directory, and collects every pack's findings
 * over every stack: the pipeline, its support stacks, and the router and cell stacks inside its stages.
 */
export function runAudit({ app: appName, build, isolation }: AuditSubject, options: { now?: Date; progress?: Progress } = {}): AuditReport {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-audit-'));
  const progress = options.progress;
  const total = 6;
  try {
    progress?.step('synthesizing the fleet', { done: 0, total });
    const app = build(outdir);
    app.synth();
    progress?.step('AwsSolutions checks', { done: 1, total });
    const solutions = nagFindings(new AwsSolutionsChecks(), app);
    progress?.step('CellIsolation checks', { done: 2, total });
    const isolated = nagFindings(new CellIsolationChecks(undefined, isolation), app);
    progress?.step('Control Tower proactive controls', { done: 3, total });
    const tower = controlTowerFindings(app);
    progress?.step('NIST 800-53 rev 5 checks', { done: 4, total });
    const nist = nagFindings(new NIST80053R5Checks(), app);
    const templates = writtenTemplates(outdir);
    progress?.step(`cfn-lint over ${templates.length} templates`, { done: 5, total });
    const linted = cfnLintFindings(templates);
    progress?.finish();
    const findings = [...solutions, ...isolated, ...tower, ...nist, ...linted];
    return buildReport({
      app: appName,
      generatedAt: options.now ?? new Date(),
      stacks: allStacks(app).map(stackLabel),
      policies: PACK_POLICIES,
      findings,
    });
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}
