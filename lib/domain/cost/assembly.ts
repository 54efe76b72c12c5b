import * as fs from 'fs';
import * as path from 'path';
import { readTemplates, TemplateUnderCheck } from '../limits';

/** One deployed stack of a written cloud assembly, with its nested stacks' templates. */
export interface AssemblyStack {
  readonly stackName: string;
  readonly account: string;
  readonly region: string;
  /** The stack's template first, then its nested stacks' (their `stack` is `<stackName>/<id>`). */
  readonly templates: readonly TemplateUnderCheck[];
}

interface ManifestArtifact {
  readonly type: string;
  readonly environment?: string;
  readonly properties?: { readonly templateFile?: string; readonly stackName?: string; readonly directoryName?: string };
}

/**
 * Every stack a written cloud assembly (`cdk.out`) deploys, the pipeline stages' nested assemblies
 * included: what `cdk synth` wrote is what a deploy creates. Throws, saying how to write one, when
 * the directory holds no assembly.
 */
export function readAssembly(dir: string): AssemblyStack[] {
  const manifestPath = path.join(dir, 'manifest.json');
  if (!fs.existsSync(manifestPath)) {
    throw new Error(`${dir} holds no synthesized assembly (no manifest.json): run \`npx cdk synth\` first, or name one with --assembly DIR`);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as { artifacts?: Record<string, ManifestArtifact> };
  return Object.entries(manifest.artifacts ?? {}).flatMap(([id, a]): AssemblyStack[] => {
    if (a.type === 'cdk:cloud-assembly' && a.properties?.directoryName) return readAssembly(path.join(dir, a.properties.directoryName));
    if (a.type !== 'aws:cloudformation:stack' || !a.properties?.templateFile) return [];
    const env = /^aws:\/\/([^/]+)\/(.+)$/.exec(a.environment ?? '');
    if (!env) throw new Error(`${dir}: stack ${id} has no account and region (${a.environment ?? 'none'}); the fleet's stacks all name both`);
    const stackName = a.properties.stackName ?? id;
    return [{ stackName, account: env[1], region: env[2], templates: readTemplates(path.join(dir, a.properties.templateFile), stackName) }];
  });
}
