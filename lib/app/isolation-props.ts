import { Fleet } from '../domain/fleet';
import { CellIsolationChecksProps, FleetFacts, routerImageConfig } from '../constructs/isolation';

/** The fleet as the isolation rules see it: who owns which account, name and address range. */
export function fleetFacts(fleet: Fleet): FleetFacts {
  return {
    app: fleet.app,
    // Cell zero is a cell to every rule, without a range: its VPC is the existing stack's, not the factory's.
    cells: [
      ...fleet.cells.map((c) => ({ id: c.id, account: c.account, cidr: c.cidr })),
      ...(fleet.cellZero ? [{ id: fleet.cellZero.id, account: fleet.cellZero.account }] : []),
    ],
    routerAccount: fleet.accounts.router,
    toolingAccount: fleet.accounts.tooling,
  };
}

/**
 * The cell-isolation pack's props for `fleet`: its facts, and the fleet's router configuration for a
 * router task that rendered none of its own.
 */
export function isolationChecksPropsOf(fleet: Fleet): CellIsolationChecksProps {
  return { facts: fleetFacts(fleet), defaultRouterConfig: routerImageConfig(fleet) };
}
