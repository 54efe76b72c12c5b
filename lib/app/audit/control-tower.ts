import * as fs from 'fs';
import * as path from 'path';
import { CfnGuardValidator } from '@cdklabs/cdk-validator-cfnguard';
import { IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport, PolicyViolation } from 'aws-cdk-lib';

/** Plugin name, and so the namespace of its acknowledgments: `ControlTower::CT.S3.PR.1`. */
export const CONTROL_TOWER = 'ControlTower';

/** One bundled cfn-guard rule file and the resource types it checks. */
interface GuardRule {
  readonly file: string;
  readonly types: readonly string[];
}

/** The Control Tower proactive-control rules bundled with @cdklabs/cdk-validator-cfnguard. */
function bundledRules(): GuardRule[] {
  const root = path.join(path.dirname(require.resolve('@cdklabs/cdk-validator-cfnguard/package.json')), 'rules', 'control-tower', 'cfn-guard');
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  return walk(root)
    .filter((f) => f.endsWith('.guard'))
    .map((file) => ({
      file,
      types: [...new Set(fs.readFileSync(file, 'utf8').match(/AWS::[A-Za-z0-9]+::[A-Za-z0-9]+/g) ?? [])],
    }));
}

/** `CT.S3.PR.1` from a cfn-guard description `[CT.S3.PR.1]: Require ...`. */
export function controlId(description: string): string | undefined {
  return /^\s*\[(CT\.[A-Z0-9]+\.PR\.\d+)\]/.exec(description)?.[1];
}

/**
 * AWS Control Tower proactive controls (the CloudFormation hooks that block a deploy in a landing
 * zone) as a CDK validation plugin: cfn-guard, with the rules AWS publishes, over each template.
 * Findings are named by control (`CT.CLOUDWATCH.PR.2`), so an acknowledgment reads
 * `Validations.of(construct).acknowledge({ id: 'ControlTower::CT.CLOUDWATCH.PR.2', reason })`.
 *
 * Only the rules that name a resource type the template contains are run: the same findings
 * (checked on the example fleet) in about a third of the time, since cfn-guard's cost grows with
 * the rules it evaluates against each template.
 */
export class ControlTowerChecks implements IPolicyValidationPlugin {
  public readonly name = CONTROL_TOWER;
  private readonly rules: readonly GuardRule[];

  constructor() {
    this.rules = bundledRules();
    if (this.rules.length === 0) throw new Error('ControlTowerChecks: no rules found in @cdklabs/cdk-validator-cfnguard; run `npm ci`');
  }

  public validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const byRule = new Map<string, PolicyViolation>();
    for (const violation of context.templatePaths.flatMap((t) => this.checkTemplate(t))) {
      const seen = byRule.get(violation.ruleName);
      if (seen) byRule.set(violation.ruleName, { ...seen, violatingResources: [...seen.violatingResources, ...violation.violatingResources] });
      else byRule.set(violation.ruleName, violation);
    }
    return { success: byRule.size === 0, violations: [...byRule.values()] };
  }

  /** The Control Tower findings of one template, one violation per control. */
  public checkTemplate(templatePath: string): PolicyViolation[] {
    const template = JSON.parse(fs.readFileSync(templatePath, 'utf8')) as { Resources?: Record<string, { Type: string }> };
    const types = new Set(Object.values(template.Resources ?? {}).map((r) => r.Type));
    const rules = this.rules.filter((r) => r.types.some((t) => types.has(t))).map((r) => r.file);
    if (rules.length === 0) return [];
    const report = new CfnGuardValidator({ controlTowerRulesEnabled: false, rules, maxBuffer: 256 * 1024 * 1024 }).validate({
      templatePaths: [templatePath],
    } as unknown as Parameters<CfnGuardValidator['validate']>[0]);
    return report.violations.map((v) => ({
      ruleName: controlId(v.description) ?? v.ruleName,
      description: v.description.replace(/^\s*\[CT\.[A-Z0-9]+\.PR\.\d+\]:\s*/, ''),
      fix: v.fix,
      severity: 'error',
      ruleMetadata: { ...v.ruleMetadata, GuardRule: v.ruleName },
      violatingResources: v.violatingResources.map((r) => ({ ...r, templatePath })),
    }));
  }
}
