import type { AwsCredentialIdentityProvider } from '@aws-sdk/types';
import { Fleet, routedCells } from '../domain/fleet';
import {
  cellStackName,
  mappingBucketParameter,
  moveBucketParameter,
  moveOperatorRoleName,
  moverLauncherRoleName,
  moverParameter,
  routerClusterParameter,
  routerServiceName,
  routerStackName,
} from '../domain/names';
import { assumedRole, ssmParameter } from '../adapters/aws/assumed-role';
import { isCredentialsError, credentialsHint } from '../adapters/aws/credentials';
import { EcsCellData } from '../operations/moves/aws-cell';
import { S3HandoffStore } from '../operations/moves/aws-handoff';
import { MoverTaskInfo } from '../domain/names/move-bucket';
import { EcsMoverRunner, MoverCell } from '../operations/moves/aws-runner';
import { ecsRunningTasks, S3RoutingControl, servedReportProbe } from '../operations/moves/aws-routing';
import { S3MoveStore } from '../operations/moves/s3-store';
import { CellData } from '../operations/moves/cell-data';
import { MoveStore } from '../operations/moves/store';
import { Clock, MoveError } from '../domain/moves/types';
import { RoutingControl } from '../operations/moves/routing-control';
import { HandoffStore } from '../operations/moves/handoff';

/**
 * What `cellctl move` without `--local` works with: the fleet's move bucket (S3MoveStore for the
 * records, the hand-off), the mapping buckets of every region (freeze, flip, unfreeze), and each
 * cell's mover task, run in the cell's account through its launcher role. Everything runs as the
 * move operator role of the router account (`<app>-move-operator`): a caller that is not that role
 * already assumes it.
 */
export interface AwsMoveContext {
  readonly store: MoveStore;
  readonly handoff: HandoffStore;
  readonly routing: RoutingControl;
  readonly cell: (id: string, bucketCount: number) => CellData;
  readonly description: string;
  /**
   * The operator interrupted the command: stop every mover task it started (StopTask through each
   * cell's launcher role), start no other and end any wait. Returns the tasks stopped, and those
   * that could not be.
   */
  interrupt(reason: string): Promise<{ stopped: string[]; failed: string[] }>;
}

export interface AwsMoveOptions {
  /** The move bucket; default: the SSM parameter `/<app>/moves/bucket` of the fleet's `router.homeRegion`. */
  readonly movesBucket?: string;
  readonly copyRowsPerSecond?: number;
  readonly batchRows?: number;
  readonly clock: Clock;
  readonly progress?: (line: string) => void;
  /** Seconds a router may take to apply a version before the move stops. @default 600 */
  readonly routerTimeoutSeconds?: number;
}

const moveError = (message: string) => new MoveError(message);

/**
 * The operator's credentials: the caller's own when it already is the move operator role, else
 * that role assumed (operators of the router or the tooling account may).
 */
async function operatorCredentials(fleet: Fleet, region: string): Promise<AwsCredentialIdentityProvider | undefined> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetCallerIdentityCommand, STSClient } = require('@aws-sdk/client-sts') as typeof import('@aws-sdk/client-sts');
  const sts = new STSClient({ region });
  let arn: string;
  try {
    arn = (await sts.send(new GetCallerIdentityCommand({}))).Arn ?? '';
  } catch (error) {
    if (isCredentialsError(error)) throw new MoveError(`moves between AWS cells need AWS credentials: ${credentialsHint(error as Error)}`);
    throw new MoveError(`cannot tell who the caller is (sts:GetCallerIdentity: ${(error as Error).name}: ${(error as Error).message})`);
  } finally {
    sts.destroy();
  }
  const roleName = moveOperatorRoleName(fleet.app);
  const partition = arn.split(':')[1] || 'aws';
  if (arn.startsWith(`arn:${partition}:sts::${fleet.accounts.router}:assumed-role/${roleName}/`)) return undefined;
  const roleArn = `arn:${partition}:iam::${fleet.accounts.router}:role/${roleName}`;
  const provider = assumedRole(roleArn, 'cellctl-move', undefined, region, moveError);
  try {
    await provider();
  } catch (error) {
    throw new MoveError(
      `${(error as Error).message}; cellctl move runs as ${roleArn} (in the router stack of ${fleet.router.homeRegion}), which operators of the router account (${fleet.accounts.router}) and the tooling account (${fleet.accounts.tooling}) may assume; you are ${arn}`,
    );
  }
  return provider;
}

const parameter = (name: string, region: string, credentials: AwsCredentialIdentityProvider | undefined, missing: string) =>
  ssmParameter(name, region, credentials, missing, moveError);

export async function awsMoveContext(fleet: Fleet, options: AwsMoveOptions): Promise<AwsMoveContext> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { S3Client } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { ECSClient } = require('@aws-sdk/client-ecs') as typeof import('@aws-sdk/client-ecs');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { MappingStore } = require('../adapters/mapping-store/store') as typeof import('../adapters/mapping-store/store');
  const home = fleet.router.homeRegion;
  const credentials = await operatorCredentials(fleet, home);
  const interruption = new AbortController();
  const withCredentials = credentials ? { credentials } : {};
  const pathStyle = process.env.S3_FORCE_PATH_STYLE === 'true';
  const bucket =
    options.movesBucket ??
    (await parameter(
      moveBucketParameter(fleet.app),
      home,
      credentials,
      `the fleet has no move bucket yet; deploy ${routerStackName(fleet.app, home)} (it creates the move bucket and the operator role), or pass --moves-bucket NAME`,
    ));
  const s3 = new S3Client({ region: home, forcePathStyle: pathStyle, ...withCredentials });
  const store = new S3MoveStore(s3, bucket);
  const regions = Object.keys(fleet.regions);
  const mappingBuckets = await Promise.all(
    regions.map(async (region) => ({
      region,
      s3: new S3Client({ region, forcePathStyle: pathStyle, ...withCredentials }),
      bucket: await parameter(mappingBucketParameter(fleet.app), region, credentials, `deploy ${routerStackName(fleet.app, region)} first`),
    })),
  );
  const stores = mappingBuckets.map(({ s3: client, bucket: name }) => new MappingStore(client, name));
  const clusters = new Map<string, Promise<string>>();
  const ecsByRegion = new Map<string, InstanceType<typeof ECSClient>>();
  const routerTasks = async (region: string, group: string) => {
    if (!clusters.has(region))
      clusters.set(region, parameter(routerClusterParameter(fleet.app), region, credentials, `deploy ${routerStackName(fleet.app, region)} first`));
    if (!ecsByRegion.has(region)) ecsByRegion.set(region, new ECSClient({ region, ...withCredentials }));
    return ecsRunningTasks(ecsByRegion.get(region)!, await clusters.get(region)!, routerServiceName(fleet.app, region, group));
  };
  const groups = fleet.router.groups.map((g) => g.name);
  const routing = new S3RoutingControl({
    stores,
    groups,
    routerSlots: fleet.router.slots,
    clock: options.clock,
    progress: options.progress,
    signal: interruption.signal,
    timeoutMs: (options.routerTimeoutSeconds ?? 600) * 1000,
    // Each router task reports the version it serves in its region's mapping bucket (lib/runtime/router/served.ts);
    // ECS says which tasks still run, so a task whose agent went quiet is waited for, not forgotten.
    probe: servedReportProbe(mappingBuckets, groups, { runningTasks: routerTasks }),
  });
  // Cell zero too (docs/cell-zero.md): its adoption stack runs the same mover task behind the same launcher role.
  const cells: Record<string, MoverCell> = Object.fromEntries(
    routedCells(fleet).map((c) => [c.id, { id: c.id, account: c.account, region: c.region }]),
  );
  const launchers = new Map<string, AwsCredentialIdentityProvider>();
  const launcher = (cell: MoverCell) => {
    if (!launchers.has(cell.id)) {
      launchers.set(
        cell.id,
        assumedRole(
          `arn:${fleet.partition}:iam::${cell.account}:role/${moverLauncherRoleName(fleet.app, cell.id)}`,
          `cellctl-move-${cell.id}`.slice(0, 64),
          credentials,
          cell.region,
          moveError,
        ),
      );
    }
    return launchers.get(cell.id)!;
  };
  const infos = new Map<string, Promise<MoverTaskInfo>>();
  const runner = new EcsMoverRunner({
    s3,
    bucket,
    bucketRegion: home,
    cells,
    clock: options.clock,
    progress: options.progress,
    signal: interruption.signal,
    ecs: (cell) => new ECSClient({ region: cell.region, credentials: launcher(cell) }),
    taskInfo: (cell) => {
      if (!infos.has(cell.id)) {
        infos.set(
          cell.id,
          parameter(
            moverParameter(fleet.app, cell.id),
            cell.region,
            launcher(cell),
            `the cell stack ${cellStackName(fleet.app, cell.id)} has no mover yet; deploy the cells (the pipeline's cell waves) first`,
          ).then((text) => JSON.parse(text) as MoverTaskInfo),
        );
      }
      return infos.get(cell.id)!;
    },
  });
  const laneOf = async (moveId: string) => {
    const stored = await store.read(moveId);
    if (!stored) throw new MoveError(`no move ${moveId} in ${store.description}`);
    const { source, target } = stored.record;
    for (const id of [source, target]) if (!cells[id]) throw new MoveError(`move ${moveId}: cell ${id} is not in the fleet config`);
    return { sourceAccount: cells[source].account, targetAccount: cells[target].account };
  };
  return {
    store,
    handoff: new S3HandoffStore(s3, bucket),
    routing,
    description: `s3://${bucket}`,
    interrupt: async (reason) => {
      // The running tasks are taken before the abort: a task started after it is stopped by its own watch.
      const stopping = runner.stopAll(reason);
      interruption.abort();
      return stopping;
    },
    cell: (id, bucketCount) => {
      if (!cells[id]) throw new MoveError(`cell ${id} is not in the fleet config (cells: ${Object.keys(cells).join(', ')})`);
      return new EcsCellData(id, { runner, bucketCount, batchRows: options.batchRows ?? 5000, copyRowsPerSecond: options.copyRowsPerSecond, laneOf });
    },
  };
}
