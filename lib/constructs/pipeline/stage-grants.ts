import { Aws, DefaultStackSynthesizer, Stack } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as pipelines from 'aws-cdk-lib/pipelines';
import { stageProjectPrefix } from '../../domain/names';
import { statementsOf } from './bootstrap-grants';

/**
 * The grants of the stage steps (clear, bake, protect), sized so that one pipeline holds hundreds of
 * cells (docs/limits.md, "The pipeline's per-cell entries"):
 *
 * - a step assumes its stage's roles by name pattern, in exactly the stage's accounts
 *   (`aws:ResourceAccount`, IAM User Guide, AWS global condition context keys,
 *   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-resourceaccount),
 *   about 15 characters per account instead of one ARN (about 90) per role and stack. The accounts
 *   decide the reach: a step reaches its own stage's accounts and no other's, as listed ARNs did; a
 *   cell owns its account, and the deploy role it already assumes is account-wide.
 * - the stage steps' CodeBuild projects are named `<app>-stage-<step>`, and the pipeline's CodeBuild
 *   action role starts them by that one name pattern rather than listing each project (about 10
 *   characters per cell in one statement, which IAM cannot split).
 */

/**
 * One IAM name pattern matching every name of `names`: the name itself when they are all the same,
 * else their longest common prefix and suffix around a `*` (`orders-cell-1-protector`,
 * `orders-cell-2-protector` → `orders-cell-*-protector`).
 */
export function namePattern(names: readonly string[]): string {
  const unique = [...new Set(names)];
  if (unique.length === 0) throw new Error('namePattern: no names');
  if (unique.length === 1) return unique[0];
  let prefix = unique[0];
  for (const n of unique) while (!n.startsWith(prefix)) prefix = prefix.slice(0, -1);
  const rests = unique.map((n) => n.slice(prefix.length));
  let suffix = rests[0];
  for (const r of rests) while (!r.endsWith(suffix)) suffix = suffix.slice(1);
  return `${prefix}*${suffix}`;
}

/** The CDK bootstrap deploy role of every account in `region` (default qualifier), as a name pattern. */
export function deployRolePattern(region: string, qualifier = DefaultStackSynthesizer.DEFAULT_QUALIFIER): string {
  return `cdk-${qualifier}-deploy-role-*-${region}`;
}

/** `sts:AssumeRole` on the roles named by `patterns`, in exactly `accounts`. */
export function assumeInAccounts(patterns: readonly string[], accounts: readonly string[]): iam.PolicyStatement {
  if (patterns.length === 0 || accounts.length === 0) throw new Error('assumeInAccounts: needs at least one role pattern and one account');
  return new iam.PolicyStatement({
    actions: ['sts:AssumeRole'],
    resources: [...new Set(patterns)].sort().map((p) => `arn:${Aws.PARTITION}:iam::*:role/${p}`),
    conditions: { StringEquals: { 'aws:ResourceAccount': [...new Set(accounts)].sort() } },
  });
}

/**
 * Rewrites the pipeline's CodeBuild action role so that it starts, stops and reads the builds of the
 * stage projects (named by `stageProjectName`) by one pattern in the tooling account and region, the
 * other projects (synth, self-mutation, assets) still listed. Call after `buildPipeline()`. Returns
 * how many projects the pattern replaced.
 */
export function grantStageProjectsByPattern(pipeline: pipelines.CodePipeline, app: string): number {
  const stack = Stack.of(pipeline);
  const prefix = stageProjectPrefix(app);
  const staged = new Set(
    stack.node
      .findAll()
      .filter(
        (c): c is codebuild.CfnProject =>
          c instanceof codebuild.CfnProject && Stack.of(c) === stack && typeof c.name === 'string' && c.name.startsWith(prefix),
      )
      .map((c) => stack.resolve(c.logicalId) as string),
  );
  const role = pipeline.node.findAll().find((c): c is iam.Role => c instanceof iam.Role && c.node.path.endsWith('/CodeBuildActionRole'));
  if (!role) throw new Error('grantStageProjectsByPattern: no CodeBuildActionRole in the pipeline; update lib/constructs/pipeline/stage-grants.ts');
  const policy = role.node.tryFindChild('DefaultPolicy');
  if (!(policy instanceof iam.Policy)) return 0;
  const statements = statementsOf(policy.document);
  let replaced = 0;
  const rewritten = statements.map((s) => {
    const json = s.toStatementJson() as Record<string, unknown>;
    if (s.effect !== iam.Effect.ALLOW || json.Condition || json.NotResource || json.Principal || json.NotPrincipal) return s;
    const isStaged = (r: string) => {
      const resolved = stack.resolve(r) as { 'Fn::GetAtt'?: [string, string] };
      return resolved?.['Fn::GetAtt']?.[1] === 'Arn' && staged.has(resolved['Fn::GetAtt'][0]);
    };
    const mine = s.resources.filter(isStaged);
    if (mine.length === 0) return s;
    replaced += mine.length;
    return new iam.PolicyStatement({
      actions: s.actions,
      resources: [
        ...s.resources.filter((r) => !isStaged(r)),
        stack.formatArn({ service: 'codebuild', resource: 'project', resourceName: `${prefix}*` }),
      ],
    });
  });
  statements.splice(0, statements.length, ...rewritten);
  if (replaced !== staged.size)
    throw new Error(
      `grantStageProjectsByPattern: the action role listed ${replaced} of the ${staged.size} stage projects; update lib/constructs/pipeline/stage-grants.ts`,
    );
  return replaced;
}
