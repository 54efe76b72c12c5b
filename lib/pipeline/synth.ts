import * as codebuild from 'aws-cdk-lib/aws-codebuild';

/**
 * The Node.js major the pipeline's CodeBuild steps run: an LTS line CodeBuild's Ubuntu
 * `standard:7.0` image offers in `runtime-versions` (CodeBuild User Guide, "Available runtimes",
 * https://docs.aws.amazon.com/codebuild/latest/userguide/available-runtimes.html). Pinned, because
 * without `runtime-versions` CodeBuild picks the image's default, which changes when a version
 * reaches end of life (same page). Node 20 left support in April 2026; `.nvmrc` names the same major.
 */
export const PIPELINE_NODE_MAJOR = 22;

/** The CodeBuild image of the synth step: Ubuntu 22.04 (`aws/codebuild/standard:7.0`). */
export const SYNTH_BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0;

/** The oldest HAProxy the router supports (runtime map versions, `map_beg` longest match; see NOTES.md). */
export const MIN_HAPROXY = { major: 2, minor: 6 } as const;
/** The HAProxy branch installed for the router tests: the one the router image runs (images/router-haproxy). */
export const SYNTH_HAPROXY_BRANCH = '2.8';

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

/**
 * The synth step's install commands. Ubuntu 22.04's own `haproxy` package is 2.4, older than the
 * router needs, so HAProxy comes from the HAProxy team's Ubuntu PPA (`ppa:vbernat/haproxy-2.8`,
 * where haproxy.debian.net sends Ubuntu users) and is checked before any test runs.
 */
export const SYNTH_INSTALL_COMMANDS: readonly string[] = [
  'apt-get update -qq',
  'apt-get install -y -qq --no-install-recommends software-properties-common',
  `add-apt-repository -y ppa:vbernat/haproxy-${SYNTH_HAPROXY_BRANCH}`,
  'apt-get update -qq',
  `apt-get install -y -qq haproxy=${SYNTH_HAPROXY_BRANCH}.\\*`,
  requireHaproxyCommand(),
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
