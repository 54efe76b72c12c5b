import { Aws, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as pipelines from 'aws-cdk-lib/pipelines';

/**
 * CDK Pipelines grants `sts:AssumeRole` on the CDK bootstrap roles of every environment it deploys
 * to by listing each role's ARN: the pipeline role every deploy role, the asset roles every file-
 * and image-publishing role. Each ARN costs about 128 characters, one statement cannot be split,
 * and a managed policy holds 6,144 (docs/performance.md, "How many cells one pipeline holds"): the pipeline could
 * not pass 58 cells. This rewrites those statements into one statement per role that names the roles
 * by the bootstrap template's naming (`cdk-<qualifier>-<kind>-role-<account>-<region>`) with the
 * account as `*`, one pattern per kind and region, and limits the accounts by a condition:
 *
 * - `aws:ResourceOrgID` equal to the fleet's organization when `pipeline.organizationId` is set:
 *   constant size, whatever the number of cells. The key is in the request context of `sts:AssumeRole`
 *   whenever the role's account is in an organization; it is the organization of the *resource* (the
 *   role assumed) and meant for identity policies ("rules that apply to all resources in an
 *   organization that are specified in the Resource element of an identity-based policy"), and STS is
 *   not among the services the key does not support (IAM User Guide, AWS global condition context
 *   keys, aws:ResourceOrgID,
 *   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-resourceorgid).
 * - otherwise `aws:ResourceAccount` in the list of the fleet's accounts (same page,
 *   #condition-keys-resourceaccount: "always included in the request context for most service
 *   actions", STS not excepted): about 15 characters per account instead of 128 per environment.
 *
 * The bootstrap roles still decide who may assume them (they trust the tooling account only, see
 * `cellctl accounts bootstrap`), so the pattern grants nothing the listed ARNs did not, except the same
 * bootstrap role in a region of those accounts the fleet does not use, which the per-region patterns
 * exclude. Statements that mix other resources, or carry conditions, are left as they are.
 */
export interface BootstrapGrantOptions {
  /** AWS Organizations id (`o-…`) of every account the pipeline deploys to. */
  readonly organizationId?: string;
}

export const BOOTSTRAP_ROLE_KINDS = ['deploy', 'file-publishing', 'image-publishing', 'lookup'] as const;
export type BootstrapRoleKind = (typeof BOOTSTRAP_ROLE_KINDS)[number];

export interface BootstrapRoleArn {
  readonly account: string;
  readonly qualifier: string;
  readonly kind: BootstrapRoleKind;
  readonly region: string;
}

const BOOTSTRAP_ARN = new RegExp(
  `^arn:(?:\\$\\{AWS::Partition\\}|aws[a-z-]*):iam::(\\d{12}):role/cdk-([a-z0-9_-]+?)-(${BOOTSTRAP_ROLE_KINDS.join('|')})-role-(\\d{12})-([a-z0-9-]+)$`,
);

/** A role ARN rendered from the template (literal, `Fn::Sub` or `Fn::Join` with the partition) as a string, or undefined when it holds anything else. */
function renderArn(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o['Fn::Sub'] === 'string' && !/\$\{(?!AWS::Partition\})/.test(o['Fn::Sub'])) return o['Fn::Sub'];
    if (Array.isArray(o['Fn::Join'])) {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      const rendered = parts.map((p) =>
        typeof p === 'string' ? p : JSON.stringify(p) === '{"Ref":"AWS::Partition"}' ? '${AWS::Partition}' : undefined,
      );
      return rendered.every((p) => p !== undefined) ? rendered.join(sep) : undefined;
    }
  }
  return undefined;
}

/** The parts of a CDK bootstrap role ARN (as CloudFormation would render `value`), or undefined for any other ARN. */
export function parseBootstrapRoleArn(value: unknown): BootstrapRoleArn | undefined {
  const arn = renderArn(value);
  const m = arn === undefined ? null : BOOTSTRAP_ARN.exec(arn);
  if (!m || m[1] !== m[4]) return undefined;
  return { account: m[1], qualifier: m[2], kind: m[3] as BootstrapRoleKind, region: m[5] };
}

/** `Resource` patterns and `Condition` of the statement that replaces listed bootstrap role ARNs. */
export function bootstrapPatternStatement(roles: readonly BootstrapRoleArn[], options: BootstrapGrantOptions): iam.PolicyStatement {
  const patterns = [...new Set(roles.map((r) => `cdk-${r.qualifier}-${r.kind}-role-*-${r.region}`))].sort();
  const accounts = [...new Set(roles.map((r) => r.account))].sort();
  return new iam.PolicyStatement({
    actions: ['sts:AssumeRole'],
    resources: patterns.map((p) => `arn:${Aws.PARTITION}:iam::*:role/${p}`),
    conditions: options.organizationId
      ? { StringEquals: { 'aws:ResourceOrgID': options.organizationId } }
      : { StringEquals: { 'aws:ResourceAccount': accounts } },
  });
}

/** The statements of a policy document. PolicyDocument keeps them private and offers no way to replace one; checked, so an aws-cdk-lib change fails synth loudly. */
export function statementsOf(document: iam.PolicyDocument): iam.PolicyStatement[] {
  const statements = (document as unknown as { statements?: unknown }).statements;
  if (!Array.isArray(statements) || !statements.every((s) => s instanceof iam.PolicyStatement)) {
    throw new Error(
      "grantBootstrapRolesByPattern: aws-cdk-lib's PolicyDocument no longer keeps its statements in `statements`; update lib/constructs/pipeline/bootstrap-grants.ts",
    );
  }
  return statements as iam.PolicyStatement[];
}

/**
 * Rewrites, in each of `roles`, the `sts:AssumeRole` statements that list only CDK bootstrap roles
 * into one pattern statement (see BootstrapGrantOptions). Call it after `CodePipeline.buildPipeline()`
 * (every grant exists then) and before synthesis (IAM splits a large role policy into managed
 * policies when the app synthesizes). Returns the bootstrap roles each role had listed.
 */
export function grantBootstrapRolesByPattern(roles: readonly iam.Role[], options: BootstrapGrantOptions = {}): Map<iam.Role, BootstrapRoleArn[]> {
  const rewritten = new Map<iam.Role, BootstrapRoleArn[]>();
  for (const role of roles) {
    const stack = Stack.of(role);
    const policy = role.node.tryFindChild('DefaultPolicy');
    if (!(policy instanceof iam.Policy)) continue;
    const statements = statementsOf(policy.document);
    const listed: BootstrapRoleArn[] = [];
    const keep = statements.filter((s) => {
      const json = s.toStatementJson() as Record<string, unknown>;
      const actions = [json.Action].flat();
      if (
        s.effect !== iam.Effect.ALLOW ||
        actions.length !== 1 ||
        actions[0] !== 'sts:AssumeRole' ||
        json.Condition ||
        json.NotResource ||
        json.Principal ||
        json.NotPrincipal
      )
        return true;
      const parsed = s.resources.map((r) => parseBootstrapRoleArn(stack.resolve(r)));
      if (parsed.length === 0 || parsed.some((p) => p === undefined)) return true;
      listed.push(...(parsed as BootstrapRoleArn[]));
      return false;
    });
    if (listed.length === 0) continue;
    statements.splice(0, statements.length, ...keep, bootstrapPatternStatement(listed, options));
    rewritten.set(role, listed);
  }
  return rewritten;
}

/**
 * The roles of a CDK Pipelines pipeline whose bootstrap-role grants grow with every environment:
 * the pipeline role (each deploy role) and the file and image asset roles (each publishing role).
 * The stage steps' roles (clear, bake, protect) are not among them: each is bounded by its own
 * stage's accounts, never the organization, since a step must not reach another stage's stacks
 * (stage-grants.ts).
 */
export function fleetWideRoles(pipeline: pipelines.CodePipeline): iam.Role[] {
  const assets = pipeline.node.findAll().filter((c): c is iam.Role => c instanceof iam.Role && /\/Assets\/(File|Docker)Role$/.test(c.node.path));
  const role = pipeline.pipeline.role;
  return [...(role instanceof iam.Role ? [role] : []), ...assets];
}
