/**
 * Cell zero in the fleet model: its checks, its defaults, and the list of every cell a router
 * reaches (the factory's cells and cell zero). Pure: no CDK, no AWS SDK.
 */
import { DEFAULT_ALARMS, DEFAULT_CELL_ENDPOINT_TEMPLATE } from './defaults';
import { CELL_ID } from './patterns';
import { CellZero, Fleet, FleetInput } from './types';

/** Cell zero's id when the fleet file gives none. */
export const DEFAULT_CELL_ZERO_ID = 'zero';
/** PostgreSQL's own port: an existing database is rarely on the factory's 5433. */
export const DEFAULT_CELL_ZERO_DATABASE_PORT = 5432;

const ACCOUNT_ID = /^\d{12}$/;
const VPC_ID = /^vpc-[0-9a-f]{8,17}$/;
const SUBNET_ID = /^subnet-[0-9a-f]{8,17}$/;
const SECURITY_GROUP_ID = /^sg-[0-9a-f]{8,17}$/;
const LOAD_BALANCER_ARN = /^arn:([^:]+):elasticloadbalancing:([^:]*):([^:]*):loadbalancer\/(app|net|gwy)\/([^/]+)\/([0-9a-f]+)$/;
const SECRET_ARN = /^arn:([^:]+):secretsmanager:([^:]*):([^:]*):secret:(.+)$/;

/** One cell as the routers reach it: the factory's cells and cell zero alike. */
export interface RoutedCell {
  readonly id: string;
  readonly region: string;
  readonly account: string;
  /** The port of its PrivateLink listener. */
  readonly port: number;
  readonly scheme: 'http' | 'https';
  /** True for cell zero: the factory does not build it. */
  readonly adopted: boolean;
  /** CellConfig.endpointGeneration. */
  readonly endpointGeneration?: number;
}

/** `endpointGeneration` (of a cell or cell zero, at `at`): a whole number from 1. */
export function endpointGenerationProblems(at: string, generation: number | undefined): string[] {
  if (generation === undefined || (Number.isInteger(generation) && generation >= 1)) return [];
  return [
    `${at}: endpointGeneration ${generation} must be a whole number from 1 (raise it by one each time the stack is deleted and created again after the routers linked it)`,
  ];
}

/** Every cell the routers reach, in mapping order: the factory's cells, then cell zero. */
export function routedCells(fleet: Pick<Fleet, 'cells' | 'cellZero'>): RoutedCell[] {
  const cells: RoutedCell[] = fleet.cells.map((c) => ({
    id: c.id,
    region: c.region,
    account: c.account,
    port: c.certificateArn ? 443 : 80,
    scheme: c.certificateArn ? 'https' : 'http',
    adopted: false,
    ...(c.endpointGeneration ? { endpointGeneration: c.endpointGeneration } : {}),
  }));
  const zero = fleet.cellZero;
  if (zero)
    cells.push({
      id: zero.id,
      region: zero.region,
      account: zero.account,
      port: cellZeroPort(zero),
      scheme: zero.loadBalancer.protocol,
      adopted: true,
      ...(zero.endpointGeneration ? { endpointGeneration: zero.endpointGeneration } : {}),
    });
  return cells;
}

/** The adoption NLB's listener: 443 for an HTTPS listener behind it (TLS passed through), else 80, like a cell's. */
export const cellZeroPort = (zero: Pick<CellZero, 'loadBalancer'>): number => (zero.loadBalancer.protocol === 'https' ? 443 : 80);

/** `app/<name>/<id>`: the ALB's dimension in CloudWatch (`LoadBalancer`). */
export function loadBalancerFullName(arn: string): string {
  const match = LOAD_BALANCER_ARN.exec(arn);
  if (!match) throw new Error(`\`${arn}\` is not a load balancer ARN`);
  return `${match[4]}/${match[5]}/${match[6]}`;
}

/**
 * Problems with `cellZero`, one line each. `partition` is the fleet's; `accounts` are the cells'
 * resolved accounts (from the config and the accounts file) that cell zero may not share.
 */
export function cellZeroProblems(input: FleetInput, partition: string, cellAccounts: readonly (string | undefined)[]): string[] {
  const zero = input.cellZero;
  if (!zero) return [];
  const id = zero.id ?? DEFAULT_CELL_ZERO_ID;
  const at = 'cellZero';
  const problems: string[] = [];
  if (!CELL_ID.test(id)) problems.push(`${at}.id: \`${id}\` is malformed; use 2-31 characters of a-z, 0-9 and '-', starting with a letter`);
  if ((input.cells ?? []).some((c) => c.id === id))
    problems.push(`${at}.id: \`${id}\` is also a cell of \`cells\`; give cell zero an id of its own (default \`${DEFAULT_CELL_ZERO_ID}\`)`);
  problems.push(...endpointGenerationProblems(at, zero.endpointGeneration));
  const regions = Object.keys(input.regions ?? {});
  const before = problems.length;
  if (!regions.includes(zero.region))
    problems.push(
      `${at}: unknown region \`${zero.region}\`; add it to \`regions\` with its Availability Zones (routers must reach cell zero from every region)`,
    );
  if (!ACCOUNT_ID.test(zero.account)) {
    problems.push(`${at}.account: \`${zero.account}\` is not a 12-digit AWS account id`);
  } else if (zero.account === input.accounts?.router || zero.account === input.accounts?.tooling) {
    problems.push(`${at}.account: ${zero.account} is the router or tooling account; cell zero is the existing stack's own account`);
  } else if (cellAccounts.includes(zero.account)) {
    problems.push(`${at}.account: ${zero.account} is already a cell's account; cells share no account, and cell zero keeps the existing stack's`);
  }
  if (!VPC_ID.test(zero.vpc.id)) problems.push(`${at}.vpc.id: \`${zero.vpc.id}\` is not a VPC id such as vpc-0abc12345def67890`);
  const subnets = zero.vpc.privateSubnetIds;
  const badSubnet = subnets.find((s) => !SUBNET_ID.test(s));
  if (badSubnet !== undefined) problems.push(`${at}.vpc.privateSubnetIds: \`${badSubnet}\` is not a subnet id such as subnet-0abc12345def67890`);
  else if (new Set(subnets).size < 2)
    problems.push(`${at}.vpc.privateSubnetIds: give at least two different subnets (one per Availability Zone), got ${new Set(subnets).size}`);
  // An ARN in another region or account than a wrong region or account says nothing more: one line.
  const placed = problems.length === before;
  problems.push(...loadBalancerProblems(zero, partition, placed));
  problems.push(...databaseProblems(zero, partition, placed));
  const alarms = zero.alarms ?? {};
  if (alarms.errorRatePercent !== undefined && !(alarms.errorRatePercent > 0 && alarms.errorRatePercent <= 100))
    problems.push(`${at}.alarms.errorRatePercent: ${alarms.errorRatePercent} must be a percentage above 0 and at most 100`);
  if (alarms.p99LatencyMs !== undefined && !(alarms.p99LatencyMs > 0))
    problems.push(`${at}.alarms.p99LatencyMs: ${alarms.p99LatencyMs} must be a positive number of milliseconds`);
  if (alarms.evaluationPeriods !== undefined && !(Number.isInteger(alarms.evaluationPeriods) && alarms.evaluationPeriods >= 1))
    problems.push(`${at}.alarms.evaluationPeriods: ${alarms.evaluationPeriods} must be a whole number of 1-minute periods, at least 1`);
  const template = input.router?.cellEndpointTemplate ?? DEFAULT_CELL_ENDPOINT_TEMPLATE;
  const endpointOf = (cellId: string) => template.replace('{cell}', cellId).replace('{app}', input.app);
  const clash = (input.cells ?? []).find((c) => c.id !== id && endpointOf(c.id).replace('{scheme}', '') === endpointOf(id).replace('{scheme}', ''));
  if (clash)
    problems.push(
      `${at}: its endpoint \`${endpointOf(id)}\` is also cell \`${clash.id}\`'s; router.cellEndpointTemplate must name each cell apart ({cell})`,
    );
  return problems;
}

function loadBalancerProblems(zero: NonNullable<FleetInput['cellZero']>, partition: string, placed: boolean): string[] {
  const at = 'cellZero.loadBalancer';
  const lb = zero.loadBalancer;
  const problems: string[] = [];
  const match = LOAD_BALANCER_ARN.exec(lb.arn);
  if (!match) {
    problems.push(
      `${at}.arn: \`${lb.arn}\` is not a load balancer ARN (arn:${partition}:elasticloadbalancing:${zero.region}:${zero.account}:loadbalancer/app/NAME/ID)`,
    );
  } else {
    const [, arnPartition, region, account, kind] = match;
    if (kind === 'net') {
      problems.push(
        `${at}.arn: a Network Load Balancer; the adoption NLB forwards only to an Application Load Balancer (an ALB-type target group): give the ARN of the ALB the existing stack serves from`,
      );
    } else if (kind === 'gwy') {
      problems.push(
        `${at}.arn: a Gateway Load Balancer carries no HTTP; give the ARN of the Application Load Balancer the existing stack serves from`,
      );
    }
    if (arnPartition !== partition) problems.push(`${at}.arn: in partition ${arnPartition}, not the fleet's ${partition}`);
    if (placed && region !== zero.region)
      problems.push(
        `${at}.arn: the load balancer is in \`${region}\`, cell zero in \`${zero.region}\`; an NLB targets an ALB of its own VPC only: set cellZero.region to \`${region}\``,
      );
    if (placed && account !== zero.account)
      problems.push(
        `${at}.arn: the load balancer is in account ${account}, cell zero's is ${zero.account}; the adoption stack deploys beside it: set cellZero.account to ${account}`,
      );
  }
  if (!Number.isInteger(lb.listenerPort) || lb.listenerPort < 1 || lb.listenerPort > 65535)
    problems.push(`${at}.listenerPort: ${lb.listenerPort} is not a TCP port (1-65535)`);
  if (lb.healthCheckPath !== undefined && !lb.healthCheckPath.startsWith('/'))
    problems.push(`${at}.healthCheckPath: \`${lb.healthCheckPath}\` must start with '/'`);
  return problems;
}

function databaseProblems(zero: NonNullable<FleetInput['cellZero']>, partition: string, placed: boolean): string[] {
  const at = 'cellZero.database';
  const db = zero.database;
  const problems: string[] = [];
  if (db.host.trim() === '') problems.push(`${at}.host: empty; give the host name the database answers on`);
  if (db.name.trim() === '') problems.push(`${at}.name: empty; give the database name`);
  if (db.port !== undefined && (!Number.isInteger(db.port) || db.port < 1 || db.port > 65535))
    problems.push(`${at}.port: ${db.port} is not a TCP port (1-65535)`);
  if (!SECURITY_GROUP_ID.test(db.clientSecurityGroupId))
    problems.push(`${at}.clientSecurityGroupId: \`${db.clientSecurityGroupId}\` is not a security group id such as sg-0abc12345def67890`);
  const match = SECRET_ARN.exec(db.secretArn);
  if (!match) {
    problems.push(
      `${at}.secretArn: \`${db.secretArn}\` is not a Secrets Manager secret ARN (arn:${partition}:secretsmanager:${zero.region}:${zero.account}:secret:NAME-xxxxxx)`,
    );
    return problems;
  }
  const [, arnPartition, region, account, name] = match;
  // The mover's grant names the secret exactly: a partial ARN (no random suffix) matches no secret.
  if (!/-[A-Za-z0-9]{6}$/.test(name))
    problems.push(
      `${at}.secretArn: \`${db.secretArn}\` has no 6-character suffix; give the complete ARN (\`aws secretsmanager describe-secret --secret-id ${name} --query ARN\`)`,
    );
  if (arnPartition !== partition) problems.push(`${at}.secretArn: in partition ${arnPartition}, not the fleet's ${partition}`);
  if (placed && region !== zero.region)
    problems.push(
      `${at}.secretArn: the secret is in \`${region}\`; the mover tasks read it in cell zero's region \`${zero.region}\`: replicate it there (Secrets Manager replica) and give the replica's ARN`,
    );
  if (placed && account !== zero.account)
    problems.push(
      `${at}.secretArn: the secret is in account ${account}; the mover tasks read it in cell zero's account ${zero.account}: give a secret of that account`,
    );
  return problems;
}

/** Cell zero with its defaults, once `cellZeroProblems` found nothing. */
export function resolveCellZero(input: FleetInput): CellZero | undefined {
  const zero = input.cellZero;
  if (!zero) return undefined;
  return {
    id: zero.id ?? DEFAULT_CELL_ZERO_ID,
    region: zero.region,
    account: zero.account,
    availabilityZones: input.regions[zero.region].availabilityZones,
    vpc: { id: zero.vpc.id, privateSubnetIds: [...zero.vpc.privateSubnetIds] },
    loadBalancer: {
      arn: zero.loadBalancer.arn,
      listenerPort: zero.loadBalancer.listenerPort,
      protocol: zero.loadBalancer.protocol ?? 'http',
      healthCheckPath: zero.loadBalancer.healthCheckPath ?? input.workload.healthCheckPath,
    },
    database: {
      host: zero.database.host,
      port: zero.database.port ?? DEFAULT_CELL_ZERO_DATABASE_PORT,
      name: zero.database.name,
      secretArn: zero.database.secretArn,
      clientSecurityGroupId: zero.database.clientSecurityGroupId,
    },
    alarms: cellZeroAlarms(input),
    ...(zero.endpointGeneration ? { endpointGeneration: zero.endpointGeneration } : {}),
  };
}

/** Cell zero's thresholds: its own where given, else the fleet's. */
function cellZeroAlarms(input: FleetInput): CellZero['alarms'] {
  const fleet = { ...DEFAULT_ALARMS, ...input.alarms };
  const own = input.cellZero?.alarms ?? {};
  return {
    errorRatePercent: own.errorRatePercent ?? fleet.errorRatePercent,
    p99LatencyMs: own.p99LatencyMs ?? fleet.p99LatencyMs,
    evaluationPeriods: own.evaluationPeriods ?? fleet.evaluationPeriods,
  };
}
