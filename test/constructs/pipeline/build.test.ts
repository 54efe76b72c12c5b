import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Template } from 'aws-cdk-lib/assertions';
import { addPipeline } from '../../../lib/app';
import { PIPELINE_NODE_MAJOR } from '../../../lib/constructs/pipeline';
import { missingContainerTools } from '../../support/containers';
import { BuildRun, cleanCheckout, ensureBuildImage, runBuildCommands } from '../../support/build-container';
import { cdkApp, exampleFleet } from '../../support/fleet';

/**
 * The pipeline's build step as CodeBuild would run it: the buildspec's install and build commands,
 * read from the synthesized pipeline template, run here in order in an unprivileged container
 * (podman's default capabilities, no `--privileged`, as CodeBuild's non-privileged mode) on a Debian
 * stand-in for its image, from a clean checkout of this tree. So a build command that needs a
 * container runtime, a system package or a server (the integration tests) fails here, not in the
 * first pipeline run.
 */
const missing = missingContainerTools();
const describeBuild = missing ? describe.skip : describe;
if (missing)
  test('the build test can run here', () => {
    throw new Error(`build test: ${missing}`);
  });

describeBuild("the pipeline's build step, in an unprivileged container", () => {
  let spec: { phases: Record<string, { commands?: string[]; 'runtime-versions'?: Record<string, number> }> };
  let checkout: string;
  let image: string;
  let build: BuildRun;

  beforeAll(async () => {
    const app = cdkApp();
    const stack = addPipeline(app, exampleFleet(), { audit: false });
    const projects = Object.values(Template.fromStack(stack).findResources('AWS::CodeBuild::Project'));
    const [synth] = projects.filter((p) => JSON.stringify(p).includes('npx cdk synth'));
    expect(synth.Properties.Environment.PrivilegedMode).toBe(false);
    spec = JSON.parse(synth.Properties.Source.BuildSpec);
    image = await ensureBuildImage(spec.phases.install['runtime-versions']!.nodejs);
    checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'build-checkout-'));
    cleanCheckout(checkout);
    build = await runBuildCommands({ image, source: checkout, install: spec.phases.install.commands ?? [], build: spec.phases.build.commands ?? [] });
  }, 2_400_000);
  afterAll(() => {
    if (checkout) fs.rmSync(checkout, { recursive: true, force: true });
  });

  it('runs on the Node.js the buildspec pins', () => {
    expect(spec.phases.install['runtime-versions']).toEqual({ nodejs: PIPELINE_NODE_MAJOR });
    expect(build.stdout).toMatch(new RegExp(`^v${PIPELINE_NODE_MAJOR}\\.`, 'm'));
  });

  it('runs every install and build command to success, unprivileged', () => {
    const commands = [...(spec.phases.install.commands ?? []), ...(spec.phases.build.commands ?? [])];
    const ran = [...build.stdout.matchAll(/^\[Container\] Running command (.*)$/gm)].map((m) => m[1]);
    expect({ failed: build.failed, status: build.status, tail: build.failed ? (build.stdout + build.stderr).slice(-3000) : '' }).toEqual({
      failed: undefined,
      status: 0,
      tail: '',
    });
    expect(ran).toEqual(commands);
  });

  it('leaves the cloud assembly the pipeline deploys, every template linted', () => {
    const out = path.join(checkout, 'cdk.out');
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')) as { artifacts: Record<string, { type: string }> };
    expect(Object.values(manifest.artifacts).some((a) => a.type === 'aws:cloudformation:stack')).toBe(true);
    expect(build.stdout + build.stderr).toMatch(/cfn-lint/);
  });

  it('is a container without the privileges the image tests need (no new mount namespace)', async () => {
    const r = await runBuildCommands({ image, source: checkout, install: [], build: ['unshare --mount true'] });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Operation not permitted/);
  });
});
