import type { AwsCredentialIdentityProvider } from '@aws-sdk/types';
import { parseSignalsRecord } from '../../domain/capacity/signals';
import { cellSignalsParameter, cellWriterFailoverRoleName } from '../../domain/names';
import type { CellDatabase, DatabaseMember, DatabaseState } from '../../domain/zones/writers';
import { assumedRole, ssmParameter } from './assumed-role';

export interface AwsCellDatabaseOptions {
  readonly app: string;
  readonly partition: string;
  readonly cell: { readonly id: string; readonly account: string; readonly region: string };
  /** The operator's credentials. @default the SDK's standard chain */
  readonly credentials?: AwsCredentialIdentityProvider;
}

/**
 * A cell's database in its own account, through its writer-failover role
 * (`CellWriterFailoverAccess`): the identifier from the cell's signals parameter (CloudFormation
 * names the database), each instance's zone as an AZ ID (DescribeAvailabilityZones maps the
 * account's zone names), and the failover: `FailoverDBCluster` to the target reader (Aurora) or
 * `RebootDBInstance` with `ForceFailover` (Multi-AZ RDS).
 */
export function awsCellDatabase(o: AwsCellDatabaseOptions): CellDatabase {
  const { id, account, region } = o.cell;
  const roleArn = `arn:${o.partition}:iam::${account}:role/${cellWriterFailoverRoleName(o.app, id)}`;
  const credentials = assumedRole(roleArn, `cellctl-zone-${id}`.slice(0, 64), o.credentials, region);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command that does not fail writers over never loads it
  const rds = require('@aws-sdk/client-rds') as typeof import('@aws-sdk/client-rds');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  const ec2 = require('@aws-sdk/client-ec2') as typeof import('@aws-sdk/client-ec2');
  const client = new rds.RDSClient({ region, credentials });
  let identity: Promise<{ kind: 'cluster' | 'instance'; id: string }> | undefined;
  let zones: Promise<Map<string, string>> | undefined;

  const databaseOf = async () => {
    const record = parseSignalsRecord(
      await ssmParameter(cellSignalsParameter(o.app, id), region, credentials, `deploy cell ${id}'s stack (it writes the parameter)`),
      `cell ${id}'s signals parameter`,
    );
    const dims = record.signals.databaseCpu?.dimensions ?? {};
    if (dims.DBClusterIdentifier) return { kind: 'cluster' as const, id: dims.DBClusterIdentifier };
    if (dims.DBInstanceIdentifier) return { kind: 'instance' as const, id: dims.DBInstanceIdentifier };
    throw new Error(`cell ${id}'s signals parameter names no database (DBClusterIdentifier or DBInstanceIdentifier)`);
  };
  const zoneIdsOf = async () => {
    const client = new ec2.EC2Client({ region, credentials });
    try {
      const { AvailabilityZones } = await client.send(new ec2.DescribeAvailabilityZonesCommand({}));
      return new Map((AvailabilityZones ?? []).filter((z) => z.ZoneName && z.ZoneId).map((z) => [z.ZoneName!, z.ZoneId!]));
    } finally {
      client.destroy();
    }
  };
  const zoneId = async (name: string | undefined, what: string) => {
    const id = name === undefined ? undefined : (await (zones ??= zoneIdsOf())).get(name);
    if (id === undefined) throw new Error(`${what}: zone ${name ?? '(none)'} is not one of the account's zones in ${region}`);
    return id;
  };
  const instance = async (identifier: string) => {
    const { DBInstances } = await client.send(new rds.DescribeDBInstancesCommand({ DBInstanceIdentifier: identifier }));
    const found = DBInstances?.[0];
    if (!found) throw new Error(`DescribeDBInstances ${identifier} answered no instance`);
    return found;
  };

  return {
    async describe(): Promise<DatabaseState> {
      const db = await (identity ??= databaseOf());
      if (db.kind === 'instance') {
        const primary = await instance(db.id);
        const member: DatabaseMember = {
          id: db.id,
          zone: await zoneId(primary.AvailabilityZone, db.id),
          writer: true,
          status: primary.DBInstanceStatus ?? 'unknown',
        };
        const standby =
          primary.MultiAZ && primary.SecondaryAvailabilityZone ? await zoneId(primary.SecondaryAvailabilityZone, `${db.id}'s standby`) : undefined;
        return { kind: 'instance', id: db.id, members: [member], ...(standby ? { standbyZone: standby } : {}) };
      }
      const { DBClusters } = await client.send(new rds.DescribeDBClustersCommand({ DBClusterIdentifier: db.id }));
      const cluster = DBClusters?.[0];
      if (!cluster) throw new Error(`DescribeDBClusters ${db.id} answered no cluster`);
      const members: DatabaseMember[] = [];
      for (const m of cluster.DBClusterMembers ?? []) {
        if (!m.DBInstanceIdentifier) continue;
        const described = await instance(m.DBInstanceIdentifier);
        members.push({
          id: m.DBInstanceIdentifier,
          zone: await zoneId(described.AvailabilityZone, m.DBInstanceIdentifier),
          writer: m.IsClusterWriter === true,
          status: described.DBInstanceStatus ?? 'unknown',
        });
      }
      return { kind: 'cluster', id: db.id, members, ...(cluster.Status ? { status: cluster.Status } : {}) };
    },
    async failover(state: DatabaseState, target?: string): Promise<void> {
      if (state.kind === 'cluster')
        await client.send(
          new rds.FailoverDBClusterCommand({ DBClusterIdentifier: state.id, ...(target ? { TargetDBInstanceIdentifier: target } : {}) }),
        );
      else await client.send(new rds.RebootDBInstanceCommand({ DBInstanceIdentifier: state.id, ForceFailover: true }));
    },
    close: () => client.destroy(),
  };
}
