import { App, IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport, Stack, Stage, Validations } from 'aws-cdk-lib';
import {
  assemblyFindings,
  describeFinding,
  GrantedQuotas,
  LIMITS,
  LimitFinding,
  readTemplates,
  templateFindings,
  TemplateUnderCheck,
} from '../domain/limits';

export { readTemplates } from '../domain/limits';

/**
 * Fails synth when any written template of any stack (pipeline, routers, router groups, the routers'
 * nested link stacks, cells, cross-region support stacks) passes an AWS limit of lib/domain/limits: the
 * stack, the resource, its size, the limit with its page, and the fix. CloudFormation, IAM, S3 and
 * the rest would otherwise refuse it at deploy time, in the pipeline, after earlier waves shipped.
 */
export class AwsLimitChecks implements IPolicyValidationPlugin {
  public readonly name = 'AwsLimits';
  public readonly ruleIds = Object.keys(LIMITS);

  /**
   * @param deployedByPipeline whether the stack at a construct path is deployed by a pipeline stage's
   * CloudFormation action (`addLimitChecks`: every stack inside a Stage); @default none is
   */
  constructor(
    private readonly quotas: GrantedQuotas = {},
    private readonly deployedByPipeline: (stackConstructPath: string) => boolean = () => false,
  ) {}

  public validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const byPath = new Map<string, TemplateUnderCheck[]>(
      context.stackTemplates.map((t) => [
        t.templatePath,
        readTemplates(t.templatePath, t.stackConstructPath, { deployedByPipeline: this.deployedByPipeline(t.stackConstructPath) }),
      ]),
    );
    const all = [...byPath.values()].flat();
    const findings: LimitFinding[] = [...all.flatMap((t) => templateFindings(t, this.quotas)), ...assemblyFindings(all, this.quotas)];
    const templatePathOf = (f: LimitFinding) =>
      context.stackTemplates.find((t) => f.stack === t.stackConstructPath || f.stack.startsWith(`${t.stackConstructPath}/`));
    const violations = findings.map((f) => {
      const owner = templatePathOf(f);
      return {
        ruleName: f.limit,
        description: describeFinding(f),
        fix: LIMITS[f.limit].fix,
        violatingResources: [{ templatePath: owner?.templatePath ?? '', locations: [], constructPath: owner?.stackConstructPath ?? f.stack }],
      };
    });
    return { success: violations.length === 0, violations };
  }
}

/**
 * Registers `AwsLimitChecks` on the app: every synth checks every template it writes. A stack inside
 * a Stage is a pipeline stage's (this app adds Stages only to its pipeline), so its template is also
 * held to what the pipeline's CloudFormation action accepts.
 */
export function addLimitChecks(app: App, quotas: GrantedQuotas = {}): void {
  // Read when the checks run (the tree is complete then), once.
  let stagedPaths: Set<string> | undefined;
  const staged = (stackConstructPath: string) => {
    stagedPaths ??= new Set(
      app.node
        .findAll()
        .filter((c): c is Stack => Stack.isStack(c) && !c.nested && Stage.of(c) !== app)
        .map((s) => s.node.path),
    );
    return stagedPaths.has(stackConstructPath);
  };
  Validations.of(app).addPlugins(new AwsLimitChecks(quotas, staged));
}
