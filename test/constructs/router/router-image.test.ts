import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Template } from 'aws-cdk-lib/assertions';
import { Fleet, FleetInput } from '../../../lib/domain/fleet';
import { routerImageConfig } from '../../../lib/constructs/isolation';
import { routerStateFiles } from '../../../lib/runtime/router';
import { routerGroupsStackPropsOf } from '../../../lib/app';
import { RouterGroupsStack } from '../../../lib/constructs/router';
import { cdkApp, exampleFleet, REPO_ROOT, resolve, validInput } from '../../support/fleet';

/**
 * The router's images change only when the router does: the HAProxy image holds the configuration
 * rendered at synth from the router's own settings, the agent image the agent's bundle. A cell's
 * settings, another cell, or an edit of the cell constructs' source leave both asset hashes as they
 * were; a router setting changes the HAProxy image (and only it).
 */
const REGION = 'eu-west-1';

interface RouterImages {
  readonly haproxy: string;
  readonly agent: string;
  readonly configs: readonly string[];
}

/** The image tag (the asset hash) of each router container of a synthesized task definition. */
function imagesOf(template: Template, configs: readonly string[]): RouterImages {
  const [task] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
  const containers = task.Properties.ContainerDefinitions as { Name: string; Image: unknown }[];
  const tag = (name: string) => /:([0-9a-f]{64})"?\W*$/.exec(JSON.stringify(containers.find((c) => c.Name === name)!.Image))![1];
  return { haproxy: tag('haproxy'), agent: tag('agent'), configs };
}

/** Synthesizes a region's canary router group of `fleet` in this process. */
function routerImages(fleet: Fleet): RouterImages {
  const app = cdkApp();
  const stack = new RouterGroupsStack(app, 'groups', routerGroupsStackPropsOf(fleet, REGION, 'canary'));
  return imagesOf(
    Template.fromStack(stack),
    stack.groups.map((g) => g.haproxyConfig),
  );
}

const withRouter = (input: FleetInput, router: Partial<NonNullable<FleetInput['router']>>): FleetInput => ({
  ...input,
  router: { ...input.router!, ...router },
});

describe('router image assets, synthesized from fleets', () => {
  let base: RouterImages;
  beforeAll(() => {
    base = routerImages(resolve(validInput()));
  });

  it('the HAProxy image holds exactly the configuration its router group rendered', () => {
    expect(base.configs).toHaveLength(1);
    const fleet = resolve(validInput());
    const stack = new RouterGroupsStack(cdkApp(), 'groups', routerGroupsStackPropsOf(fleet, REGION, 'canary'));
    const asset = stack.node.findAll().find((c) => c.node.path.endsWith('/HaproxyImage')) as unknown as { assetHash: string };
    expect(asset.assetHash).toBe(base.haproxy);
    expect(Object.keys(routerStateFiles(base.configs[0]))).toContain('haproxy.cfg');
    // What `cellctl router config` prints and the CellIsolation pack audits for the same fleet.
    expect(base.configs[0]).toBe(routerImageConfig(fleet));
  });

  it("a fleet differing only in its cells (a cell's shape and state, one cell more) has the same router images", () => {
    const input = validInput();
    const cells = input.cells.map((c) =>
      c.id === 'eu-3' ? { ...c, shape: 'standard' } : c.id === 'eu-2' ? { ...c, state: 'draining' as const } : c,
    );
    cells.push({ id: 'eu-4', region: REGION, cidr: '10.0.64.0/20', shape: 'small', account: '444444444499' });
    const other = routerImages(resolve({ ...input, cells }));
    expect(other.configs).toEqual(base.configs);
    expect({ haproxy: other.haproxy, agent: other.agent }).toEqual({ haproxy: base.haproxy, agent: base.agent });
  });

  it("a router setting changes the HAProxy image, and not the agent's", () => {
    const input = validInput();
    const maxConn = routerImages(resolve(withRouter(input, { cellMaxConn: 300 })));
    const header = routerImages(resolve({ ...input, partitionKey: { source: 'header', name: 'x-org-id' } }));
    expect(maxConn.configs[0]).toContain('maxconn 100');
    expect(header.configs[0]).toContain('capture request header x-org-id len 129');
    expect(new Set([base.haproxy, maxConn.haproxy, header.haproxy]).size).toBe(3);
    expect([maxConn.agent, header.agent]).toEqual([base.agent, base.agent]);
  });
});

/** Text appended to a file of the copied source: file (relative to its root) → text. */
type Edits = Readonly<Record<string, string>>;

/**
 * Synthesizes the example fleet's canary router group from the source tree at `root` (its own
 * lib/, images/, cells.config.ts and a node_modules of its own: the image contexts are kept under
 * it) in a process of its own, once per step: each step first appends its edits to the copy's files,
 * then loads the copy's lib/ and cells.config.ts afresh (their modules dropped from require's cache,
 * aws-cdk-lib's asset hash cache cleared) and synthesizes. One process for all the steps: a process
 * costs a TypeScript loader and aws-cdk-lib to start, and what a step reads is the source as edited.
 */
function routerImagesFrom(root: string, steps: readonly Edits[]): RouterImages[] {
  const script = `
    const fs = require('fs');
    const path = require('path');
    const root = ${JSON.stringify(root)};
    const { Template } = require(require.resolve('aws-cdk-lib/assertions', { paths: [root] }));
    const { App, AssetStaging } = require(require.resolve('aws-cdk-lib', { paths: [root] }));
    process.chdir(root);
    const results = [];
    for (const edits of ${JSON.stringify(steps)}) {
      for (const [file, text] of Object.entries(edits)) fs.appendFileSync(path.join(root, file), text);
      for (const file of Object.keys(require.cache)) {
        if (file.startsWith(path.join(root, 'lib') + path.sep) || file === path.join(root, 'cells.config.ts')) delete require.cache[file];
      }
      AssetStaging.clearAssetHashCache();
      const { loadFleet } = require(path.join(root, 'lib/domain/fleet'));
      const { cdkJsonContext, routerGroupsStackPropsOf } = require(path.join(root, 'lib/app'));
      const { RouterGroupsStack } = require(path.join(root, 'lib/constructs/router'));
      // As test/support/fleet.ts's cdkApp: without aws-cdk-lib's built-in CloudFormation validation (seconds of CPU, warnings only).
      const app = new App({ context: cdkJsonContext(), builtinCloudFormationValidation: false, outdir: fs.mkdtempSync(path.join(require('os').tmpdir(), 'router-image-out-')) });
      const stack = new RouterGroupsStack(app, 'groups', routerGroupsStackPropsOf(loadFleet(path.join(root, 'cells.config.ts')), ${JSON.stringify(REGION)}, 'canary'));
      const [task] = Object.values(Template.fromStack(stack).findResources('AWS::ECS::TaskDefinition'));
      results.push({ containers: task.Properties.ContainerDefinitions, configs: stack.groups.map((g) => g.haproxyConfig) });
      fs.rmSync(app.outdir, { recursive: true, force: true });
    }
    process.stdout.write(JSON.stringify(results));
  `;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-image-script-')), 'synth.ts');
  fs.writeFileSync(file, script);
  const r = spawnSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), [file], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`synth in ${root} failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { containers: { Name: string; Image: unknown }[]; configs: string[] }[];
  return out.map(({ containers, configs }) => {
    const tag = (name: string) => /:([0-9a-f]{64})"?\W*$/.exec(JSON.stringify(containers.find((c) => c.Name === name)!.Image))![1];
    return { haproxy: tag('haproxy'), agent: tag('agent'), configs };
  });
}

/**
 * A copy of this repository's source at a new place: what synth reads (lib/, bin/, images/, the
 * fleet files, package.json, cdk.json) and node_modules hard-linked (same paths inside it, so a bundle
 * names its modules as it does here; copied where the temporary folder is on another file system),
 * without the image contexts kept there.
 */
function copyOfSource(): string {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'source-copy-'));
  for (const entry of ['lib', 'bin', 'images', 'cells.config.ts', 'cells.accounts.json', 'package.json', 'tsconfig.json', 'cdk.json']) {
    fs.cpSync(path.join(REPO_ROOT, entry), path.join(copy, entry), { recursive: true });
  }
  fs.mkdirSync(path.join(copy, 'node_modules'));
  const entries = fs
    .readdirSync(path.join(REPO_ROOT, 'node_modules'))
    .filter((e) => e !== '.cache')
    .map((e) => path.join(REPO_ROOT, 'node_modules', e));
  const r = spawnSync('cp', ['-al', ...entries, path.join(copy, 'node_modules')], { encoding: 'utf8' });
  if (r.status !== 0) {
    // The temporary folder on another file system than the checkout (a build container's bind mount):
    // no hard links across it, so a real copy (symbolic links would name the checkout's paths in the bundles).
    if (!/cannot create hard link/.test(r.stderr)) throw new Error(`copying node_modules: ${r.stderr}`);
    fs.rmSync(path.join(copy, 'node_modules'), { recursive: true, force: true });
    fs.mkdirSync(path.join(copy, 'node_modules'));
    const s = spawnSync('cp', ['-a', '--reflink=auto', ...entries, path.join(copy, 'node_modules')], { encoding: 'utf8' });
    if (s.status !== 0) throw new Error(`copying node_modules: ${s.stderr}`);
  }
  return copy;
}

describe('router image assets, synthesized from an edited copy of the source', () => {
  let copy: string;
  let here: RouterImages;
  let edited: RouterImages;
  let agentEdited: RouterImages;
  beforeAll(() => {
    copy = copyOfSource();
    // A change to the cell constructs that any bundle importing them would carry (a side effect
    // survives tree shaking); then one to the agent's own source.
    const cellEdit = Object.fromEntries(
      ['compute.ts', 'entry.ts', 'index.ts'].map((file) => [
        path.join('lib', 'constructs', 'cell', file),
        `\nprocess.env.EDITED_${file.replace('.ts', '').toUpperCase()} ??= '1';\n`,
      ]),
    );
    const agentEdit = { [path.join('lib', 'runtime', 'router', 'agent.ts')]: "\nprocess.env.EDITED_AGENT ??= '1';\n" };
    [here, edited, agentEdited] = routerImagesFrom(copy, [{}, cellEdit, agentEdit]);
  }, 600_000);
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it('an edit under lib/constructs/cell/ leaves both router images as they were', () => {
    expect(here.configs).toHaveLength(1);
    expect(edited).toEqual(here);
  });

  it('the copy makes the images this repository makes (the hashes depend on content, not on the checkout)', () => {
    const local = routerImages(exampleFleet());
    expect({ haproxy: here.haproxy, agent: here.agent }).toEqual({ haproxy: local.haproxy, agent: local.agent });
  });

  it("an edit of the agent's own source changes the agent image only", () => {
    expect(agentEdited.haproxy).toBe(here.haproxy);
    expect(agentEdited.agent).not.toBe(here.agent);
  });
});
