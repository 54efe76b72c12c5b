import * as codebuild from 'aws-cdk-lib/aws-codebuild';

/**
 * The Node.js major the pipeline's CodeBuild steps run: an LTS line the `standard:8.0` image offers in
 * `runtime-versions` (its definition's runtimes.yml lists `nodejs` 22 and 24; see SYNTH_BUILD_IMAGE).
 * Pinned, because without `runtime-versions` CodeBuild picks the image's default, which changes when
 * a version reaches end of life (CodeBuild User Guide, "Available runtimes",
 * https://docs.aws.amazon.com/codebuild/latest/userguide/available-runtimes.html). Node 20 left
 * support in April 2026; `.nvmrc` names the same major.
 */
export const PIPELINE_NODE_MAJOR = 22;

/**
 * The CodeBuild image of every pipeline step: `aws/codebuild/standard:8.0`, Ubuntu 24.04. The
 * CodeBuild User Guide's "Docker images provided by CodeBuild"
 * (https://docs.aws.amazon.com/codebuild/latest/userguide/build-env-ref-available.html) names each
 * curated image's definition in github.com/aws/aws-codebuild-docker-images; `ubuntu/standard/8.0`
 * there (read at commit 1590e48, April 2026) starts `FROM public.ecr.aws/ubuntu/ubuntu:24.04`, offers
 * Node.js 22 and 24 in its runtimes.yml, ships the AWS CLI v2 and Google Chrome, and the
 * repository's README lists standard 7.0 and 8.0 as the actively maintained Ubuntu images.
 * Ubuntu 24.04's own `haproxy` is the 2.8 LTS branch (2.8.5-1ubuntu3 in noble's main), which the
 * router accepts, so no third-party apt repository is needed (standard:7.0 is Ubuntu 22.04, whose
 * `haproxy` is 2.4). The install commands check the version anyway.
 */
export const SYNTH_BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_8_0;

/** The oldest HAProxy the router supports (runtime map versions, `map_beg` longest match; see NOTES.md). */
export const MIN_HAPROXY = { major: 2, minor: 6 } as const;

/** The cfn-lint release the synth step installs (the one on the CI machines). */
export const CFN_LINT_VERSION = '1.51.0';

/**
 * The build step's install commands: AWS's CloudFormation linter, which the build runs over every
 * written template (the version whose stale-schema findings lib/app/audit/cfn-lint.ts acknowledges).
 * Nothing that needs root or a container runtime: the step's CodeBuild project is unprivileged.
 */
export const SYNTH_INSTALL_COMMANDS: readonly string[] = [
  `pip install --quiet 'cfn-lint==${CFN_LINT_VERSION}'`,
  'cfn-lint --version',
  'node --version',
];

/** What the synth step's build spec adds to its commands: bash, and the pinned Node.js runtime. */
export function synthPartialBuildSpec(): codebuild.BuildSpec {
  return codebuild.BuildSpec.fromObject({
    env: { shell: 'bash' },
    phases: { install: { 'runtime-versions': { nodejs: PIPELINE_NODE_MAJOR } } },
  });
}

/**
 * The build step's commands: what a build should run, in an unprivileged CodeBuild container from a
 * clean checkout. Install, type check, the layer rules, lint and format, the unit tests (they need
 * nothing but `npm ci`: docs/testing.md), the audit (Control Tower's proactive controls among its
 * packs; an open finding fails it), the synth whose `cdk.out` the pipeline deploys (with the audit
 * gate: an open cdk-nag finding fails it), and cfn-lint over every template it wrote. Not
 * `.ci/run`: its integration tests start HAProxy, PostgreSQL and containers, and install system
 * packages as root, which a build container neither has nor may do; CI runs them on every change
 * before it reaches the pipeline. `test/constructs/pipeline/build.test.ts` runs exactly these
 * commands in an unprivileged container.
 */
export const SYNTH_COMMANDS: readonly string[] = [
  'npm ci --no-audit --no-fund',
  'npx tsc --noEmit -p .',
  'npm run -s lint:layers',
  'npm run -s lint',
  'npm run -s format:check',
  'npm run -s test:unit -- --ci',
  // The Control Tower proactive controls (cfn-guard) and the other packs, over every template: too
  // slow for every local synth, so here and in `npm run audit`, not in the synth's own gate (docs/audit.md).
  'npm run -s audit',
  'npx cdk synth -q --no-notices',
  'npm run -s lint:cfn -- cdk.out',
];
