import * as fs from 'fs';
import * as path from 'path';
import { App, IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport, Validations } from 'aws-cdk-lib';
import { assemblyFindings, CfnTemplate, describeFinding, GrantedQuotas, LIMITS, LimitFinding, templateFindings, TemplateUnderCheck } from '../limits';

/** A written template and, recursively, the nested stacks' templates it deploys (written beside it). */
export function readTemplates(templatePath: string, stack: string, parent?: TemplateUnderCheck['parent']): TemplateUnderCheck[] {
  const text = fs.readFileSync(templatePath, 'utf8');
  const self: TemplateUnderCheck = { stack, template: JSON.parse(text) as CfnTemplate, bytes: Buffer.byteLength(text), ...(parent ? { parent } : {}) };
  const nested = Object.entries(self.template.Resources ?? {})
    .filter(([, r]) => r.Type === 'AWS::CloudFormation::Stack' && typeof r.Metadata?.['aws:asset:path'] === 'string')
    .flatMap(([id, r]) => readTemplates(path.join(path.dirname(templatePath), String(r.Metadata!['aws:asset:path'])), `${stack}/${id}`, { template: self, resource: id }));
  return [self, ...nested];
}

/**
 * Fails synth when any written template of any stack (pipeline, routers, router groups, the routers'
 * nested link stacks, cells, cross-region support stacks) passes an AWS limit of lib/limits: the
 * stack, the resource, its size, the limit with its page, and the fix. CloudFormation, IAM, S3 and
 * the rest would otherwise refuse it at deploy time, in the pipeline, after earlier waves shipped.
 */
export class AwsLimitChecks implements IPolicyValidationPlugin {
  public readonly name = 'AwsLimits';
  public readonly ruleIds = Object.keys(LIMITS);

  constructor(private readonly quotas: GrantedQuotas = {}) {}

  public validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const byPath = new Map<string, TemplateUnderCheck[]>(context.stackTemplates.map((t) => [t.templatePath, readTemplates(t.templatePath, t.stackConstructPath)]));
    const all = [...byPath.values()].flat();
    const findings: LimitFinding[] = [...all.flatMap((t) => templateFindings(t, this.quotas)), ...assemblyFindings(all, this.quotas)];
    const templatePathOf = (f: LimitFinding) => context.stackTemplates.find((t) => f.stack === t.stackConstructPath || f.stack.startsWith(`${t.stackConstructPath}/`));
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

/** Registers `AwsLimitChecks` on the app: every synth checks every template it writes. */
export function addLimitChecks(app: App, quotas: GrantedQuotas = {}): void {
  Validations.of(app).addPlugins(new AwsLimitChecks(quotas));
}
