import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { CellAlarmOptions } from './alarms';

/**
 * What a fleet's own resources in a cell are built from: the cell's network, key, workload identity
 * and alarms. Everything made under `scope` is in the cell's stack, so it carries the cell's tags and
 * is checked by the cell-isolation pack and cdk-nag like the cell's own resources.
 */
export interface CellBuildingBlocks {
  /** Where to create the resources: a construct inside the cell (`<cell stack>/Cell/Extension`). */
  readonly scope: Construct;
  /** The cell's id (`eu-1`). */
  readonly cellId: string;
  /**
   * `<app>-<cell>`: the prefix of every physical name in the cell. An alarm given to `addAlarm` must
   * be named `<namePrefix>-<signal>`.
   */
  readonly namePrefix: string;
  /** The cell's VPC. */
  readonly vpc: ec2.IVpc;
  /** Private subnets with egress, where the workload runs. */
  readonly appSubnets: ec2.SubnetSelection;
  /** Isolated subnets (no route out), where the cell's database runs. */
  readonly dataSubnets: ec2.SubnetSelection;
  /** The cell's own KMS key: encrypt what you store with it, so no key is shared between cells. */
  readonly encryptionKey: kms.IKey;
  /** The workload's security group: allow it into what the workload must reach. */
  readonly workloadSecurityGroup: ec2.ISecurityGroup;
  /** The identity the workload's code runs as (task role on Fargate, instance role on EC2): grant it access. */
  readonly workloadRole: iam.IRole;
  /** The cell's alarm topic, which on-call subscribes to: give your alarms it as their ALARM and OK action. */
  readonly alarmTopic: sns.ITopic;
  /**
   * Gives the workload an environment variable, such as the name of a table made here (not a
   * secret: the value is in the template). The workload's own variables cannot be replaced.
   */
  addWorkloadEnvironment(name: string, value: string): void;
  /**
   * Makes `alarm` one of the cell's: in the cell's health (the composite the pipeline's bake reads,
   * unless `health: false`) and on the cell's dashboard. Name it `<namePrefix>-<signal>`.
   */
  addAlarm(alarm: cloudwatch.IAlarm, options?: CellAlarmOptions): void;
}

/**
 * A fleet's own resources in every cell (`cellResources` in `cells.config.ts`): called once per cell,
 * while the cell is built, with that cell's building blocks. It runs synchronously, like every construct.
 */
export type CellExtension = (cell: CellBuildingBlocks) => void;

// The fleet file's `cellResources` hook is typed here, where its argument's constructs are, and
// not in the domain's fleet model, which names no construct (lib/domain/fleet/types.ts, FleetHooks).
declare module '../../domain/fleet/types' {
  interface FleetHooks {
    readonly cellResources: CellExtension;
  }
}

/**
 * Runs `extension` for one cell; an error it throws (or a promise it returns) becomes one line naming
 * the cell, with the original as its `cause`.
 */
export function applyCellExtension(extension: CellExtension, blocks: CellBuildingBlocks): void {
  let result: unknown;
  try {
    result = extension(blocks);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`cellResources failed in cell \`${blocks.cellId}\`: ${message.split('\n')[0]}`, { cause: error });
  }
  if (result instanceof Promise) {
    result.catch(() => undefined); // its failure is reported here, not as an unhandled rejection
    throw new Error(
      `cellResources returned a promise in cell \`${blocks.cellId}\`: constructs are built synchronously; make the function synchronous (no async/await)`,
    );
  }
}
