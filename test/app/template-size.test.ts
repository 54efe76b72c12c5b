import { CfnResource, Stack } from 'aws-cdk-lib';
import { addTemplateSizeLimit, CLOUDFORMATION_TEMPLATE_BYTES, TemplateSizeLimit } from '../../lib/app';
import { cdkApp } from '../support/fleet';

/** An app with one small stack and, optionally, one whose template is over 1 MB. */
function app(withLarge: boolean) {
  const root = cdkApp();
  new CfnResource(new Stack(root, 'small'), 'Topic', { type: 'AWS::SNS::Topic' });
  if (withLarge) {
    const large = new Stack(root, 'large');
    // 40 parameters of 30 KB: 1.2 MB of template, whatever the JSON formatting.
    for (let i = 0; i < 40; i++) new CfnResource(large, `Param${i}`, { type: 'AWS::SSM::Parameter', properties: { Type: 'String', Value: 'x'.repeat(30_000) } });
  }
  return root;
}

describe('TemplateSizeLimit', () => {
  it('reports each template over CloudFormation\'s 1 MB with its size and how to split the fleet', () => {
    const root = app(true);
    const assembly = root.synth();
    const stackTemplates = assembly.stacks.map((s) => ({ stackConstructPath: s.hierarchicalId, templatePath: s.templateFullPath, accountId: undefined, region: undefined }));
    const report = new TemplateSizeLimit().validate({ stackTemplates, templatePaths: stackTemplates.map((t) => t.templatePath), appConstruct: root });
    expect(report.success).toBe(false);
    expect(report.violations).toHaveLength(1);
    expect(report.violations[0].description).toMatch(new RegExp(`^large\\.template\\.json is \\d{7} bytes; CloudFormation accepts templates up to ${CLOUDFORMATION_TEMPLATE_BYTES}$`));
    expect(report.violations[0].fix).toMatch(/split the fleet across pipelines/);
  });

  it('fails synth once registered, and lets templates under the limit through', () => {
    const fine = app(false);
    addTemplateSizeLimit(fine);
    expect(() => fine.synth()).not.toThrow();
    const tooLarge = app(true);
    addTemplateSizeLimit(tooLarge);
    expect(() => tooLarge.synth()).toThrow(/ERROR large\.template\.json is \d+ bytes; CloudFormation accepts templates up to 1000000 \(TemplateSizeLimit\)/);
  });
});
