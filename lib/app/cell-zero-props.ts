import { CellZeroStackProps } from '../constructs/cell-zero';
import { Fleet, loadBalancerFullName } from '../domain/fleet';
import { bakeWatcherRoleName, cellEndpointReaderRoleName, cellEndpointServiceParameter } from '../domain/names';

/** The fleet file's `cellZero` as the adoption stack's props: the one place a Fleet meets lib/constructs/cell-zero. */
export function cellZeroStackProps(fleet: Fleet): CellZeroStackProps {
  const zero = fleet.cellZero;
  if (!zero) throw new Error('cellZeroStackProps: the fleet declares no cellZero');
  return {
    app: fleet.app,
    cellId: zero.id,
    account: zero.account,
    region: zero.region,
    availabilityZones: zero.availabilityZones,
    vpcId: zero.vpc.id,
    privateSubnetIds: zero.vpc.privateSubnetIds,
    loadBalancer: { ...zero.loadBalancer, fullName: loadBalancerFullName(zero.loadBalancer.arn) },
    database: zero.database,
    routerAccount: fleet.accounts.router,
    toolingAccount: fleet.accounts.tooling,
    consumerRegions: Object.keys(fleet.regions).filter((r) => r !== zero.region),
    alarms: zero.alarms,
    names: {
      endpointServiceParameter: cellEndpointServiceParameter(fleet.app, zero.id),
      endpointReaderRole: cellEndpointReaderRoleName(fleet.app, zero.id),
      bakeWatcherRole: bakeWatcherRoleName(fleet.app, zero.id),
    },
  };
}
