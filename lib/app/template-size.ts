import * as fs from 'fs';
import * as path from 'path';
import { App, IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport, Validations } from 'aws-cdk-lib';

/** The largest template CloudFormation accepts (uploaded through S3, as CDK does). */
export const CLOUDFORMATION_TEMPLATE_BYTES = 1_000_000;

/**
 * Fails synth when a template is over CloudFormation's 1 MB. CDK itself only warns, and the deploy
 * then fails in the pipeline. The pipeline and the routers' templates grow with the fleet: about
 * 2 KiB per cell for the pipeline and 2.9 KB per cell of the region for a router stack.
 */
export class TemplateSizeLimit implements IPolicyValidationPlugin {
  public readonly name = 'TemplateSizeLimit';
  public readonly ruleIds = ['template-size'];

  public validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const violations = context.stackTemplates
      .map((t) => ({ ...t, bytes: fs.statSync(t.templatePath).size }))
      .filter((t) => t.bytes > CLOUDFORMATION_TEMPLATE_BYTES)
      .map((t) => ({
        ruleName: 'template-size',
        description: `${path.basename(t.templatePath)} is ${t.bytes} bytes; CloudFormation accepts templates up to ${CLOUDFORMATION_TEMPLATE_BYTES}`,
        fix: 'a region\'s router stack holds about 320 cells and a pipeline fewer (see README, "How many cells one pipeline holds"): split the fleet across pipelines, or its cells across more regions',
        violatingResources: [{ templatePath: t.templatePath, locations: [], constructPath: t.stackConstructPath }],
      }));
    return { success: violations.length === 0, violations };
  }
}

/** Registers `TemplateSizeLimit` on the app: every synth checks every template it writes. */
export function addTemplateSizeLimit(app: App): void {
  Validations.of(app).addPlugins(new TemplateSizeLimit());
}
