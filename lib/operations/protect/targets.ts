import { Fleet } from '../../domain/fleet';
import {
  cellDeletionProtectorRoleName,
  cellStackName,
  cellZeroStackName,
  routerDeletionProtectorRoleName,
  routerGroupsDeletionProtectorRoleName,
  routerGroupsStackName,
  routerStackName,
} from '../../domain/names';
import { ProtectTarget } from '../../runtime/pipeline/protect';

/**
 * Every stack of the fleet the pipeline protects after its deploy, as `cdk deploy` names them too:
 * each cell (its load balancers and database through `<app>-<cell>-protector`), cell zero's adoption
 * stack, and per region the router stack (its NLB through `<app>-router-<region>-protector`) and
 * its two group stacks (with lanes, their lane NLBs through `<app>-router-<region>-canary-protector`
 * and `-lanes-protector`). In the order a first deploy creates them: cells, cell zero, routers.
 */
export function fleetProtectTargets(fleet: Fleet): ProtectTarget[] {
  const { app } = fleet;
  return [
    ...fleet.cells.map((cell) => ({
      stackName: cellStackName(app, cell.id),
      account: cell.account,
      region: cell.region,
      deletionProtectorRole: cellDeletionProtectorRoleName(app, cell.id),
    })),
    ...(fleet.cellZero
      ? [{ stackName: cellZeroStackName(app, fleet.cellZero.id), account: fleet.cellZero.account, region: fleet.cellZero.region }]
      : []),
    ...Object.keys(fleet.regions).flatMap((region) => [
      {
        stackName: routerStackName(app, region),
        account: fleet.accounts.router,
        region,
        // With lanes the router stack has no load balancer (and no protector role): the group stacks hold them.
        ...(fleet.router.lanes ? {} : { deletionProtectorRole: routerDeletionProtectorRoleName(app, region) }),
      },
      ...(['canary', 'rest'] as const).map((part) => ({
        stackName: routerGroupsStackName(app, region, part),
        account: fleet.accounts.router,
        region,
        // With lanes each group stack holds its lanes' NLBs.
        ...(fleet.router.lanes ? { deletionProtectorRole: routerGroupsDeletionProtectorRoleName(app, region, part) } : {}),
      })),
    ]),
  ];
}

/**
 * The targets named in `stacks` (all of them when it is empty). A name that is no stack of the fleet
 * is an error naming the fleet's stacks.
 */
export function selectProtectTargets(targets: readonly ProtectTarget[], stacks: readonly string[]): ProtectTarget[] {
  if (stacks.length === 0) return [...targets];
  const unknown = stacks.filter((s) => !targets.some((t) => t.stackName === s));
  if (unknown.length > 0)
    throw new Error(
      `${unknown.map((s) => `\`${s}\``).join(', ')}: no such stack in the fleet; its stacks are ${targets.map((t) => t.stackName).join(', ')}`,
    );
  return targets.filter((t) => stacks.includes(t.stackName));
}
