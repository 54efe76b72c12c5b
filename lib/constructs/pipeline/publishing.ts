import { Stack } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as pipelines from 'aws-cdk-lib/pipelines';
import { LIMITS } from '../../domain/limits';

/**
 * Destinations one asset project publishes to at once (`xargs -P`) at least: pushes are
 * network-bound. More when the fleet needs it to finish within a pipeline action (`publishingPlan`),
 * up to MAX_PUBLISH_PARALLELISM.
 */
export const PUBLISH_PARALLELISM = 8;
/**
 * The cdk-assets release the asset projects install (`npm install -g cdk-assets@…`): pinned, so a new
 * release cannot change how the fleet's images and files are published between two runs (CDK
 * Pipelines installs `latest` otherwise). Raise it deliberately, with aws-cdk-lib.
 */
export const CDK_ASSETS_VERSION = '4.7.3';
/** The most destinations one asset project publishes to at once. */
export const MAX_PUBLISH_PARALLELISM = 32;

/**
 * Minutes one destination takes at most, per kind, for sizing the projects' timeouts: a file asset
 * is one S3 upload; an image is built once (later destinations reuse the local build) and pushed to
 * the destination's ECR repository. Estimates with a margin, not measured in AWS.
 */
export const MINUTES_PER_DESTINATION = { file: 2, docker: 10 } as const;

/**
 * How a project publishes one asset to `destinations` environments: `parallelism` at a time, the
 * fewest from PUBLISH_PARALLELISM up that finish within a pipeline action's 8 hours
 * (`LIMITS.codeBuildTimeout`), and the project's timeout sized from that (at least CodeBuild's
 * default hour). Throws, naming the limit, when even MAX_PUBLISH_PARALLELISM at a time would not.
 */
export function publishingPlan(
  destinations: number,
  kind: keyof typeof MINUTES_PER_DESTINATION,
): { readonly parallelism: number; readonly timeoutMinutes: number } {
  const limit = LIMITS.codeBuildTimeout;
  const minutes = (parallelism: number) => Math.max(60, Math.ceil(destinations / parallelism) * MINUTES_PER_DESTINATION[kind] + 15);
  for (let parallelism = PUBLISH_PARALLELISM; parallelism <= MAX_PUBLISH_PARALLELISM; parallelism++) {
    if (minutes(parallelism) <= limit.value) return { parallelism, timeoutMinutes: minutes(parallelism) };
  }
  throw new Error(
    `publishing one ${kind} asset to ${destinations} environments takes about ${minutes(MAX_PUBLISH_PARALLELISM)} minutes even ${MAX_PUBLISH_PARALLELISM} at a time, ` +
      `over the ${limit.what} of ${limit.value} ${limit.unit} (${limit.source}): ${limit.fix}`,
  );
}

/** The timeout of a project publishing one asset to `destinations` environments (`publishingPlan`). */
export function publishingTimeoutMinutes(destinations: number, kind: keyof typeof MINUTES_PER_DESTINATION): number {
  return publishingPlan(destinations, kind).timeoutMinutes;
}

const PUBLISH = /^cdk-assets --path "([^"]+)" --verbose publish "([0-9a-f]+):([^"]+)"$/;

/**
 * The build commands of one asset project, compacted: CDK Pipelines writes one `cdk-assets publish`
 * line per destination (about 250 characters each, so three shared assets of a 400-cell fleet put
 * 260 KB into the pipeline's template, past CloudFormation's 1 MB with the deploy actions), and runs
 * them one after another. Here the manifests that hold the asset are found in the cloud assembly at
 * run time and published `parallelism` at a time; the build fails unless it found exactly
 * the destinations synth planned. Returns undefined for commands of another shape.
 */
export function compactPublishCommands(
  commands: readonly string[],
  parallelism = PUBLISH_PARALLELISM,
): { commands: string[]; destinations: number; assetId: string } | undefined {
  const parsed = commands.map((c) => PUBLISH.exec(c));
  if (parsed.length === 0 || parsed.some((p) => !p)) return undefined;
  const assetIds = new Set(parsed.map((p) => p![2]));
  if (assetIds.size !== 1) return undefined;
  const [assetId] = assetIds;
  const globs = [...new Set(parsed.map((p) => (p![1].includes('/') ? `${p![1].slice(0, p![1].indexOf('/'))}` : '.')))].map((dir) =>
    dir === '.' ? '*.assets.json' : dir.startsWith('assembly-') ? 'assembly-*/*.assets.json' : `${dir}/*.assets.json`,
  );
  const destinations = parsed.length;
  return {
    assetId,
    destinations,
    commands: [
      `manifests=$(grep -l -F '"${assetId}"' ${[...new Set(globs)].join(' ')} 2>/dev/null | sort -u)`,
      `found=$(printf '%s\\n' "$manifests" | grep -c .); if [ "$found" -ne ${destinations} ]; then echo "publish: asset ${assetId} is in $found manifests, synth planned ${destinations}" >&2; exit 1; fi`,
      // A Docker config per process: parallel `docker login`s to different accounts' registries would
      // otherwise overwrite each other's entry in the one ~/.docker/config.json, and pushes fail at random.
      `printf '%s\\n' "$manifests" | xargs -P ${parallelism} -I{} sh -c 'DOCKER_CONFIG=$(mktemp -d) exec cdk-assets --path "$1" publish ${assetId}' publish {}`,
    ],
  };
}

/**
 * Rewrites every asset-publishing project of a built pipeline: compact, parallel publish commands
 * and a timeout sized from the destinations (CodeBuild's default hour does not publish an image to
 * hundreds of accounts one by one). Call after `buildPipeline()`.
 */
export function sizeAssetPublishing(pipeline: pipelines.CodePipeline): void {
  const assets = pipeline.node.tryFindChild('Assets');
  if (!assets) return;
  for (const child of assets.node.children) {
    if (!(child instanceof codebuild.Project)) continue;
    const cfn = child.node.defaultChild as codebuild.CfnProject;
    const source = Stack.of(child).resolve(cfn.source) as { buildSpec?: string };
    if (typeof source.buildSpec !== 'string') continue;
    const spec = JSON.parse(source.buildSpec) as { phases?: { build?: { commands?: string[] } } };
    const commands = spec.phases?.build?.commands ?? [];
    const kind = child.node.id.startsWith('DockerAsset') ? 'docker' : 'file';
    if (!compactPublishCommands(commands)) continue;
    const plan = publishingPlan(commands.length, kind);
    spec.phases!.build!.commands = compactPublishCommands(commands, plan.parallelism)!.commands;
    cfn.addPropertyOverride('Source.BuildSpec', JSON.stringify(spec, null, 2));
    cfn.timeoutInMinutes = plan.timeoutMinutes;
  }
}
