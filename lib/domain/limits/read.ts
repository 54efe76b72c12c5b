import * as fs from 'fs';
import * as path from 'path';
import { CfnTemplate, TemplateUnderCheck } from './templates';

/**
 * Where each nested stack template of a directory was written, by the hash its parent's TemplateURL
 * names: the assets manifests beside the templates list each as a file asset (the `aws:asset:path`
 * metadata is only written when the CDK CLI asks for it).
 */
function nestedTemplatesByHash(dir: string): Map<string, string> {
  const byHash = new Map<string, string>();
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.assets.json'))) {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { files?: Record<string, { source?: { path?: string } }> };
    for (const [hash, asset] of Object.entries(manifest.files ?? {})) {
      if (asset.source?.path?.endsWith('.nested.template.json')) byHash.set(hash, path.join(dir, asset.source.path));
    }
  }
  return byHash;
}

/** A written template and, recursively, the nested stacks' templates it deploys (written beside it). */
export function readTemplates(
  templatePath: string,
  stack: string,
  options: { readonly deployedByPipeline?: boolean; readonly parent?: TemplateUnderCheck['parent'] } = {},
  nested = nestedTemplatesByHash(path.dirname(templatePath)),
): TemplateUnderCheck[] {
  const { parent, deployedByPipeline } = options;
  const text = fs.readFileSync(templatePath, 'utf8');
  const self: TemplateUnderCheck = {
    stack,
    template: JSON.parse(text) as CfnTemplate,
    bytes: Buffer.byteLength(text),
    ...(parent ? { parent } : {}),
    ...(deployedByPipeline ? { deployedByPipeline } : {}),
  };
  const children = Object.entries(self.template.Resources ?? {})
    .filter(([, r]) => r.Type === 'AWS::CloudFormation::Stack')
    .flatMap(([id, r]) => {
      const hash = /([0-9a-f]{64})\.json/.exec(JSON.stringify(r.Properties?.TemplateURL ?? ''))?.[1];
      const file =
        (hash && nested.get(hash)) ??
        (typeof r.Metadata?.['aws:asset:path'] === 'string'
          ? path.join(path.dirname(templatePath), String(r.Metadata['aws:asset:path']))
          : undefined);
      if (!file) throw new Error(`${stack}: nested stack ${id} has no template beside ${templatePath}; the limit checks cannot read it`);
      return readTemplates(file, `${stack}/${id}`, { parent: { template: self, resource: id }, deployedByPipeline }, nested);
    });
  return [self, ...children];
}
