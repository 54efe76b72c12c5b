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
/**
 * Fails unless `haproxy -v` reports at least MIN_HAPROXY, naming what was found. Pure shell; the
 * synth step runs it after installing HAProxy, the tests run it against fake `haproxy` binaries.
 */
export function requireHaproxyCommand(): string {
  const { major, minor } = MIN_HAPROXY;
  return [
    'v=$(haproxy -v 2>/dev/null | sed -n "s/^HAProxy version \\([0-9]*\\)\\.\\([0-9]*\\).*/\\1 \\2/p" | head -n1);',
    'read -r maj min <<<"$v";',
    `if [ -z "$maj" ] || [ "$maj" -lt ${major} ] || { [ "$maj" -eq ${major} ] && [ "$min" -lt ${minor} ]; }; then`,
    `echo "synth: the router tests need HAProxy ${major}.${minor} or newer; found \${maj:-none}.\${min:-}" >&2; exit 1; fi;`,
    'echo "synth: HAProxy $maj.$min"',
  ].join(' ');
}

/** The cfn-lint release the synth step installs (the one on the CI machines). */
export const CFN_LINT_VERSION = '1.51.0';

/**
 * The synth step's install commands: the distribution's `haproxy` (2.8 on the Ubuntu 24.04 image),
 * checked before any test runs, so a different image fails here with the version it found. The
 * image ships Google Chrome, not `chromium`, which the HTML report test runs (and which Ubuntu has
 * only as a snap): `chromium` is pointed at Chrome when absent, so `.ci/run` need not install it.
 */
export const SYNTH_INSTALL_COMMANDS: readonly string[] = [
  'apt-get update -qq',
  'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy',
  requireHaproxyCommand(),
  'command -v chromium >/dev/null || { chrome=$(command -v google-chrome) && ln -s "$chrome" /usr/local/bin/chromium; } || echo "synth: no chromium or google-chrome; .ci/run will try apt"',
  // AWS's CloudFormation linter, which .ci/run and `npm run audit` run over every written template;
  // the version whose stale-schema findings lib/app/audit/cfn-lint.ts acknowledges.
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
 * The synth step's commands: the same `.ci/run` CI runs (installs what the tests need, type-checks,
 * synthesizes offline, runs the whole suite), the audit, then the synth whose `cdk.out` the
 * pipeline deploys.
 */
export const SYNTH_COMMANDS: readonly string[] = ['bash .ci/run', 'npm run audit', 'npx cdk synth -q --no-notices'];
