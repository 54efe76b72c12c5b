/**
 * How many cells one pipeline holds: synthesizes the pipeline for generated fleets of the given sizes
 * (the example config's regions and shapes, cells spread over them) and prints, per size, the
 * largest policy of each kind in the pipeline's templates, as CloudFormation would render it
 * (lib/domain/limits), against its limit; then, from the two largest sizes, the cell
 * count at which each limit is reached (every one of these grows linearly with the cell accounts).
 *
 *   npm run bench:pipeline-ceiling -- 20 70
 *   npm run bench:pipeline-ceiling -- --no-org 20 70   (without pipeline.organizationId: the
 *     bootstrap-role grants list the fleet's accounts instead of naming the organization)
 *
 * Each size synthesizes every cell stack (about 3.5 s per cell on a 2-core machine).
 */
import * as fs from 'fs';
import * as path from 'path';
import { App, Stack, Stage } from 'aws-cdk-lib';
import { cdkJsonContext, pipelineStackPropsOf } from '../lib/app';
import { generateFleet, resolveFleet } from '../lib/domain/fleet';
import { pipelineStackName } from '../lib/domain/names';
import { PipelineStack } from '../lib/constructs/pipeline';
import { describeFinding, LIMITS, policySize, templateFindings } from '../lib/domain/limits';

type Kind = 'IAM statement' | 'managed policy' | 'role inline policies' | 'bucket policy' | 'key policy' | 'pipeline template';
const LIMIT: Record<Kind, number> = {
  // CDK moves statements that do not fit the role's inline policies into managed policies, but one
  // statement cannot be split: the largest statement must fit a managed policy.
  'IAM statement': LIMITS.managedPolicy.value,
  'managed policy': LIMITS.managedPolicy.value,
  'role inline policies': LIMITS.roleInlinePolicies.value,
  'bucket policy': LIMITS.bucketPolicy.value,
  'key policy': LIMITS.keyPolicy.value,
  // Bytes of the pipeline's own template (one deploy action per cell), as synth writes it.
  'pipeline template': LIMITS.templateBytes.value,
};

function largest(cells: number): { best: Record<Kind, { size: number; what: string }>; over: string[] } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the fleet file is loaded by its path, at run time
  const input = (require(path.join(__dirname, '..', 'cells.config.ts')) as { default: Parameters<typeof generateFleet>[0] }).default;
  // The interface-endpoint quota such a fleet needs granted (docs/limits.md), declared.
  const generated = { ...generateFleet(input, cells), quotas: { interfaceEndpointsPerVpc: Math.max(50, cells) } };
  const fleet = resolveFleet(noOrg ? { ...generated, pipeline: { ...generated.pipeline!, organizationId: undefined } } : generated);
  const app = new App({ context: cdkJsonContext() });
  // The stack alone, without the size check addPipeline registers: this script measures past the limits.
  const pipeline = new PipelineStack(app, pipelineStackName(fleet.app), pipelineStackPropsOf(fleet));
  const stacks: Stack[] = [pipeline, ...Object.values(pipeline.pipeline.pipeline.crossRegionSupport).map((s) => s.stack)];
  const best: Record<Kind, { size: number; what: string }> = {
    'IAM statement': { size: 0, what: '' },
    'managed policy': { size: 0, what: '' },
    'role inline policies': { size: 0, what: '' },
    'bucket policy': { size: 0, what: '' },
    'key policy': { size: 0, what: '' },
    'pipeline template': { size: 0, what: '' },
  };
  const over: string[] = [];
  const note = (kind: Kind, size: number, what: string) => {
    if (size > best[kind].size) best[kind] = { size, what };
  };
  for (const stack of stacks) {
    const template = (Stage.of(stack) ?? app).synth().getStackArtifact(stack.artifactId).template as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const bytes = fs.statSync(path.join(app.outdir, stack.templateFile)).size;
    over.push(...templateFindings({ stack: stack.stackName, template, bytes }).map(describeFinding));
    if (stack === pipeline) note('pipeline template', bytes, stack.stackName);
    const inline = new Map<string, number>();
    for (const [id, r] of Object.entries(template.Resources)) {
      const p = r.Properties ?? {};
      if (r.Type === 'AWS::IAM::ManagedPolicy') note('managed policy', policySize(p.PolicyDocument), `${stack.stackName}/${id}`);
      if (r.Type === 'AWS::IAM::ManagedPolicy' || r.Type === 'AWS::IAM::Policy') {
        for (const st of (p.PolicyDocument as { Statement: unknown[] }).Statement) note('IAM statement', policySize(st), `${stack.stackName}/${id}`);
      }
      if (r.Type === 'AWS::S3::BucketPolicy') note('bucket policy', policySize(p.PolicyDocument), `${stack.stackName}/${id}`);
      if (r.Type === 'AWS::KMS::Key') note('key policy', policySize(p.KeyPolicy), `${stack.stackName}/${id}`);
      if (r.Type === 'AWS::IAM::Policy')
        for (const role of (p.Roles as unknown[]) ?? [])
          inline.set(JSON.stringify(role), (inline.get(JSON.stringify(role)) ?? 0) + policySize(p.PolicyDocument));
    }
    for (const [role, size] of inline) note('role inline policies', size, `${stack.stackName} ${role}`);
  }
  return { best, over };
}

const noOrg = process.argv.includes('--no-org');
const sizes = process.argv
  .slice(2)
  .filter((a) => a !== '--no-org')
  .map(Number)
  .filter((n) => n > 0);
if (sizes.length < 2) {
  console.error('usage: npm run bench:pipeline-ceiling -- <cells> <cells> [...]  (at least two fleet sizes)');
  process.exit(2);
}
const rows = sizes.map((cells) => {
  const started = Date.now();
  const { best: result, over } = largest(cells);
  console.log(
    `${cells} cells (${((Date.now() - started) / 1000).toFixed(0)} s): ${over.length === 0 ? 'deployable' : `NOT deployable: ${over.join('; ')}`}\n  ` +
      (Object.keys(LIMIT) as Kind[]).map((k) => `${k} ${result[k].size}/${LIMIT[k]}`).join(', '),
  );
  return { cells, result };
});
const [a, b] = rows.slice(-2);
console.log('\nlimit                 largest at ' + `${a.cells} / ${b.cells} cells   chars per cell   reached at about`);
for (const kind of Object.keys(LIMIT) as Kind[]) {
  const perCell = (b.result[kind].size - a.result[kind].size) / (b.cells - a.cells);
  const at = perCell > 0 ? Math.floor(a.cells + (LIMIT[kind] - a.result[kind].size) / perCell) : Infinity;
  console.log(
    `${kind.padEnd(21)} ${String(a.result[kind].size).padStart(6)} / ${String(b.result[kind].size).padStart(6)}   ${perCell.toFixed(1).padStart(14)}   ${at === Infinity ? 'not growing' : `${at} cells`} (${b.result[kind].what})`,
  );
}
