import { CellZeroConfig, Fleet, FleetInput, resolveFleet } from '../../lib/domain/fleet';
import { validInput } from './fleet';

export const CELL_ZERO_ACCOUNT = '555555555555';

/** An existing stack in eu-west-1: its ALB, VPC and PostgreSQL, as a team would describe them. */
export function cellZeroConfig(overrides: Partial<CellZeroConfig> = {}): CellZeroConfig {
  return {
    region: 'eu-west-1',
    account: CELL_ZERO_ACCOUNT,
    vpc: { id: 'vpc-0123456789abcdef0', privateSubnetIds: ['subnet-0aaaaaaaaaaaaaaa1', 'subnet-0bbbbbbbbbbbbbbb2', 'subnet-0ccccccccccccccc3'] },
    loadBalancer: {
      arn: `arn:aws:elasticloadbalancing:eu-west-1:${CELL_ZERO_ACCOUNT}:loadbalancer/app/orders-prod/50dc6c495c0c9188`,
      listenerPort: 8080,
    },
    database: {
      host: 'orders-prod.cluster-abc.eu-west-1.rds.amazonaws.com',
      name: 'orders',
      secretArn: `arn:aws:secretsmanager:eu-west-1:${CELL_ZERO_ACCOUNT}:secret:orders-prod-db-AbCdEf`,
      clientSecurityGroupId: 'sg-0123456789abcdef0',
    },
    ...overrides,
  };
}

/** The example fleet (inline accounts) adopting `cellZeroConfig()`. */
export function cellZeroInput(overrides: Partial<CellZeroConfig> = {}): FleetInput {
  return { ...validInput(), cellZero: cellZeroConfig(overrides) };
}

export function cellZeroFleet(overrides: Partial<CellZeroConfig> = {}): Fleet {
  return resolveFleet(cellZeroInput(overrides));
}

/** The shipped config's text (see configDir) adopting `cellZeroConfig()`: insert with `configDir(withCellZero)`. */
export function withCellZero(text: string): string {
  if (!/^ {2}cells: \[/m.test(text)) throw new Error('withCellZero: the shipped cells.config.ts has no `  cells: [` line to put cellZero before');
  return text.replace(/^ {2}cells: \[/m, `  cellZero: ${JSON.stringify(cellZeroConfig())},\n  cells: [`);
}
