import * as fs from 'fs';
import * as path from 'path';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { CellProps, CellStackProps } from '../constructs/cell';
import { Cell, Fleet } from '../domain/fleet';
import { REPO_ROOT } from '../domain/files/repo-root';
import { IMAGE_NAMES, imageContext, imageDockerfile } from '../runtime/images';

/** `workload.image` values of this form build a Dockerfile of this repository (an ECR image asset). */
export const IMAGE_ASSET_PREFIX = 'asset:';
/** The reference workload (images/workload), the example fleet's default. */
export const REFERENCE_WORKLOAD_IMAGE = `${IMAGE_ASSET_PREFIX}images/workload/Dockerfile`;

/** How a workload image built from this repository is shown in `cdk deploy` and in the pipeline's asset step. */
export const WORKLOAD_IMAGE_DISPLAY_NAME = 'Cell/WorkloadImage';

/**
 * The fleet file's `workload.image` as a container image: `asset:<Dockerfile>` builds that Dockerfile
 * of this repository (CDK publishes it to each cell account's bootstrap ECR repository), anything else
 * is a registry image. One of the repository's own images (the reference workload) builds from its
 * own context (lib/runtime/images), any other Dockerfile from the repository root.
 */
export function workloadContainerImage(image: string): ecs.ContainerImage {
  if (!image.startsWith(IMAGE_ASSET_PREFIX)) return ecs.ContainerImage.fromRegistry(image);
  const file = image.slice(IMAGE_ASSET_PREFIX.length);
  if (!fs.existsSync(path.join(REPO_ROOT, file))) {
    throw new Error(
      `workload.image ${image}: no ${file} in the repository; give a path to a Dockerfile relative to the repository root, or a registry image`,
    );
  }
  const own = IMAGE_NAMES.find((name) => imageDockerfile(name) === path.normalize(file));
  // The name the pipeline's asset-publishing step and `cdk deploy` show: one for every cell's copy of the image.
  const displayName = WORKLOAD_IMAGE_DISPLAY_NAME;
  return own ? ecs.ContainerImage.fromAsset(imageContext(own), { displayName }) : ecs.ContainerImage.fromAsset(REPO_ROOT, { file, displayName });
}

/**
 * The props of `cell`'s `Cell`, read from the fleet file: the one place a fleet becomes cell props.
 * Throws when `cell` is not one of `fleet.cells`.
 */
export function cellPropsOf(fleet: Fleet, cell: Cell): CellProps {
  if (!fleet.cells.some((c) => c.id === cell.id)) {
    throw new Error(
      `cell \`${cell.id}\` is not part of fleet \`${fleet.app}\`; pass one of fleet.cells (${fleet.cells.map((c) => c.id).join(', ')})`,
    );
  }
  const { shape } = cell;
  return {
    app: fleet.app,
    cellId: cell.id,
    network: { cidr: cell.cidr, availabilityZones: cell.availabilityZones, natGateways: shape.natGateways ?? 'per-zone' },
    compute: { kind: shape.compute, cpu: shape.cpu, memoryMiB: shape.memoryMiB, instanceType: shape.instanceType, capacity: shape.capacity },
    workload: {
      image: workloadContainerImage(fleet.workload.image),
      containerPort: fleet.workload.containerPort,
      healthCheckPath: fleet.workload.healthCheckPath,
    },
    database: { ...shape.database, port: fleet.workload.databasePort },
    routing: {
      routerAccount: fleet.accounts.router,
      // Every router reaches every cell: routers of every other region connect across regions.
      consumerRegions: Object.keys(fleet.regions).filter((r) => r !== cell.region),
      partitionKey: fleet.partitionKey,
      bucketCount: fleet.bucketCount,
    },
    limits: { requestsPerSecond: shape.limits.requestsPerSecond, tenantRequestsPer5Min: shape.limits.tenantRequestsPer5Min },
    alarms: { thresholds: fleet.alarms, targetUtilisation: fleet.capacity.targetUtilisation },
    certificateArn: cell.certificateArn,
    extension: fleet.cellResources,
  };
}

/** The props of `cell`'s `CellStack`: its cell, its account and region, the fleet's tooling account. */
export function cellStackPropsOf(fleet: Fleet, cell: Cell): CellStackProps {
  return {
    cell: cellPropsOf(fleet, cell),
    env: { account: cell.account, region: cell.region },
    toolingAccount: fleet.accounts.tooling,
    description: `${fleet.app} cell ${cell.id} (${cell.region}, shape ${cell.shapeName})`,
  };
}

/** Every cell's stack props, by cell id: what the pipeline's cell stages are built from. */
export function cellStacksOf(fleet: Fleet): Record<string, CellStackProps> {
  return Object.fromEntries(fleet.cells.map((cell) => [cell.id, cellStackPropsOf(fleet, cell)]));
}
