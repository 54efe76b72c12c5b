import type { HomesConfig } from './types';
/**
 * The shape of `cells.config.ts`, key by key: which keys exist, which are required, and what type
 * each holds. It is typed against `types.ts`, so adding a field to a fleet type without adding it
 * here (or adding one here that the type lacks, or marking an optional field required) fails to
 * compile. `structureProblems` checks a config against it before any value is interpreted: an
 * unknown key, a missing field or a wrong type must never be silently ignored or defaulted.
 */
import {
  AlarmThresholds,
  CapacityConfig,
  CellConfig,
  CellZeroAlarms,
  CellZeroConfig,
  CellShape,
  FleetInput,
  OrganizationConfig,
  PartitionKeySource,
  PipelineConfig,
  PipelineSource,
  RegionConfig,
  RouterConfig,
  RouterGroupConfig,
  RouterLanesConfig,
  WavePolicy,
  WorkloadConfig,
} from './types';
import { GrantedQuotas } from '../limits/quotas';
import { PARTITIONS } from './regions';
import { ROUTER_REACHES } from './reach';

/** What one value may be. */
export type ValueSpec =
  | { readonly type: 'string' }
  | { readonly type: 'number'; readonly integer?: boolean }
  | { readonly type: 'boolean' }
  /** A function (a hook the constructs call); what it does is checked when it runs. */
  | { readonly type: 'function'; readonly signature: string }
  | { readonly type: 'enum'; readonly values: readonly string[] }
  | { readonly type: 'array'; readonly items: ValueSpec }
  /** An object with free keys (region names, shape names), each value of one spec. */
  | { readonly type: 'record'; readonly values: ValueSpec; readonly label?: (key: string) => string }
  | { readonly type: 'object'; readonly fields: Readonly<Record<string, FieldSpec>> }
  /** One of several objects, told apart by the string in `tag`. */
  | { readonly type: 'variants'; readonly tag: string; readonly variants: Readonly<Record<string, Readonly<Record<string, FieldSpec>>>> };

export type FieldSpec = ValueSpec & { readonly optional?: boolean };

// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- `{}` is what an all-optional Pick accepts: the test for an optional key
type IsOptional<T, K extends keyof T> = {} extends Pick<T, K> ? true : false;

/** Every key of `T`, each marked optional exactly when the type makes it optional. */
export type Fields<T> = {
  readonly [K in keyof Required<T>]-?: IsOptional<T, K> extends true
    ? ValueSpec & { readonly optional: true }
    : ValueSpec & { readonly optional?: false };
};

type Tagged<T, Tag extends keyof T> = { readonly [V in T as V[Tag] & string]: Fields<V> };

const object = <T>(fields: Fields<T>): ValueSpec => ({ type: 'object', fields });
const variants = <T, Tag extends keyof T & string>(tag: Tag, map: Tagged<T, Tag>): ValueSpec => ({
  type: 'variants',
  tag,
  variants: map as unknown as Record<string, Record<string, FieldSpec>>,
});
const string = { type: 'string' } as const;
const integer = { type: 'number', integer: true } as const;
const number = { type: 'number' } as const;
const boolean = { type: 'boolean' } as const;
const optional = <S extends ValueSpec>(spec: S): S & { readonly optional: true } => ({ ...spec, optional: true });
const oneOf = (...values: string[]): ValueSpec => ({ type: 'enum', values });

const PARTITION_KEY = variants<PartitionKeySource, 'source'>('source', {
  header: { source: oneOf('header'), name: string },
  path: { source: oneOf('path'), segment: integer },
  host: { source: oneOf('host'), label: integer },
  jwt: { source: oneOf('jwt'), claim: string, algorithm: oneOf('RS256', 'ES256'), publicKeys: { type: 'array', items: string } },
});

const SHAPE = object<CellShape>({
  compute: oneOf('fargate', 'ec2'),
  cpu: integer,
  memoryMiB: integer,
  instanceType: optional(string),
  capacity: object<CellShape['capacity']>({ min: integer, desired: integer, max: integer }),
  database: object<CellShape['database']>({
    engine: oneOf('aurora-postgresql', 'rds-postgresql'),
    instanceClass: string,
    allocatedStorageGiB: optional(integer),
    backupRetentionDays: optional(integer),
    engineVersion: optional(string),
  }),
  natGateways: optional(oneOf('per-zone', 'one')),
  limits: object<CellShape['limits']>({ requestsPerSecond: number, maxTenants: integer, tenantRequestsPer5Min: integer }),
});

const CELL = object<CellConfig>({
  id: string,
  region: string,
  cidr: string,
  shape: string,
  canary: optional(boolean),
  state: optional(oneOf('active', 'draining', 'quarantine')),
  account: optional(string),
  certificateArn: optional(string),
  endpointGeneration: optional(integer),
  wave: optional(integer),
  tier: optional(string),
  dedicatedTo: optional(string),
  failoverRegion: optional(string),
});

const ALARMS: Fields<Partial<AlarmThresholds>> = {
  errorRatePercent: optional(number),
  p99LatencyMs: optional(number),
  unhealthyHosts: optional(number),
  dbCpuPercent: optional(number),
  dbConnections: optional(number),
  dbFreeStorageGiB: optional(number),
  oldestMessageSeconds: optional(number),
  dlqMessages: optional(number),
  evaluationPeriods: optional(integer),
};

const ROUTER = object<RouterConfig>({
  homeRegion: optional(string),
  groups: optional({ type: 'array', items: object<RouterGroupConfig>({ name: string, tasks: optional(integer), weight: optional(integer) }) }),
  lanes: optional(
    object<RouterLanesConfig>({
      count: integer,
      perTenant: integer,
      maxOverlap: optional(integer),
      tasksPerLane: optional(integer),
      hostedZone: optional(object<{ id: string; name: string }>({ id: string, name: string })),
    }),
  ),
  mappingBucket: optional(string),
  publishBakeSeconds: optional(integer),
  cellEndpointTemplate: optional(string),
  cidrs: optional({ type: 'record', values: string }),
  keptVersions: optional(integer),
  certificateArns: optional({ type: 'record', values: string }),
  stalenessMinutes: optional(integer),
  slots: optional(integer),
  cellMaxConn: optional(integer),
  queueTimeoutMs: optional(integer),
  tenantMaxConn: optional(integer),
  clientMaxConnPerCell: optional(integer),
  maxBodyBytes: optional(integer),
  fullTaskLeaves: optional(boolean),
  zonalAutoshift: optional(boolean),
  reach: optional(oneOf(...ROUTER_REACHES)),
  regionUrls: optional({ type: 'record', values: string }),
  zoneAffinity: optional(oneOf('spread', 'own-zone')),
});

const PIPELINE = object<PipelineConfig>({
  source: variants<PipelineSource, 'kind'>('kind', {
    connection: { kind: oneOf('connection'), connectionArn: string, repository: string, branch: string },
    s3: { kind: oneOf('s3'), bucketName: string, objectKey: string },
  }),
  region: optional(string),
  manualApproval: optional(boolean),
  deploymentWindow: optional(object<NonNullable<PipelineConfig['deploymentWindow']>>({ cron: string, timeZone: optional(string) })),
  organizationId: optional(string),
});

/** `cells.config.ts`'s default export. */
export const FLEET_SCHEMA: Fields<FleetInput> = {
  app: string,
  partitionKey: optional(PARTITION_KEY),
  bucketCount: optional(integer),
  partition: optional(oneOf(...PARTITIONS)),
  accounts: object<FleetInput['accounts']>({ tooling: string, router: string }),
  regions: { type: 'record', values: object<RegionConfig>({ availabilityZones: { type: 'array', items: string } }) },
  shapes: { type: 'record', values: SHAPE, label: (name) => `shape \`${name}\`` },
  workload: object<WorkloadConfig>({ image: string, containerPort: integer, healthCheckPath: string, databasePort: optional(integer) }),
  cells: { type: 'array', items: CELL },
  waves: object<WavePolicy>({
    singleCellWaves: integer,
    growthFactor: number,
    maxCellsPerWave: integer,
    bakeSeconds: object<WavePolicy['bakeSeconds']>({ canary: integer, single: integer, group: integer }),
  }),
  alarms: optional({ type: 'object', fields: ALARMS }),
  router: optional(ROUTER),
  organization: optional(
    object<OrganizationConfig>({
      accountEmail: string,
      organizationalUnitId: string,
      roleName: optional(string),
      executionPolicyArn: optional(string),
    }),
  ),
  pipeline: optional(PIPELINE),
  quotas: optional(object<GrantedQuotas>({ interfaceEndpointsPerVpc: optional(integer) })),
  capacity: optional(
    object<CapacityConfig>({
      targetUtilisation: optional(number),
      spareCells: optional(integer),
      largeTenantShare: optional(number),
      defaultTier: optional(string),
    }),
  ),
  homes: optional(
    object<HomesConfig>({
      defaultRegion: string,
      prefixes: optional({ type: 'record', values: string }),
      groups: optional({ type: 'array', items: { type: 'array', items: string } }),
    }),
  ),
  cellResources: optional({ type: 'function', signature: '(cell) => { ... }' }),
  cellZero: optional(
    object<CellZeroConfig>({
      id: optional(string),
      region: string,
      account: string,
      vpc: object<CellZeroConfig['vpc']>({ id: string, privateSubnetIds: { type: 'array', items: string } }),
      loadBalancer: object<CellZeroConfig['loadBalancer']>({
        arn: string,
        listenerPort: integer,
        protocol: optional(oneOf('http', 'https')),
        healthCheckPath: optional(string),
      }),
      database: object<CellZeroConfig['database']>({
        host: string,
        port: optional(integer),
        name: string,
        secretArn: string,
        clientSecurityGroupId: string,
      }),
      alarms: optional(
        object<Partial<CellZeroAlarms>>({ errorRatePercent: optional(number), p99LatencyMs: optional(number), evaluationPeriods: optional(integer) }),
      ),
      endpointGeneration: optional(integer),
    }),
  ),
};

/** Levenshtein distance, for did-you-mean suggestions. */
function distance(a: string, b: string): number {
  const previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0];
    previous[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j];
      previous[j] = Math.min(previous[j] + 1, previous[j - 1] + 1, diagonal + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1));
      diagonal = above;
    }
  }
  return previous[b.length];
}

/** `; did you mean \`x\`?` for the closest known key, or the list of known keys when none is close. */
export function suggestion(key: string, known: readonly string[]): string {
  const ranked = known.map((k) => ({ k, d: distance(key, k) })).sort((x, y) => x.d - y.d);
  const best = ranked[0];
  if (best && best.d <= Math.max(2, Math.floor(key.length / 3))) return `; did you mean \`${best.k}\`?`;
  return `; known keys: ${known.join(', ')}`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return `the string '${value}'`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Where a problem is: `alarms.errorRatePercent`, `cell \`eu-3\`: cidr`, `shape \`small\`: database.engine`;
 * '' at the top level.
 */
const LABEL = /^(cell|shape) `[^`]*`$/;
const child = (where: string, key: string) => (LABEL.test(where) ? `${where}: ${key}` : where ? `${where}.${key}` : key);
const prefix = (where: string) => (where ? `${where}: ` : '');

function valueProblems(value: unknown, spec: ValueSpec, where: string): string[] {
  switch (spec.type) {
    case 'string':
      return typeof value === 'string' ? [] : [`${where} must be a string, got ${describe(value)}`];
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        const hint = typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? ` (write ${value} without quotes)` : '';
        return [`${where} must be a number, got ${describe(value)}${hint}`];
      }
      return spec.integer && !Number.isInteger(value) ? [`${where} must be a whole number, got ${value}`] : [];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${where} must be true or false, got ${describe(value)}`];
    case 'function':
      return typeof value === 'function' ? [] : [`${where} must be a function \`${spec.signature}\`, got ${describe(value)}`];
    case 'enum':
      return typeof value === 'string' && spec.values.includes(value)
        ? []
        : [`${where} must be ${spec.values.map((v) => `'${v}'`).join(' or ')}, got ${describe(value)}`];
    case 'array':
      if (!Array.isArray(value)) return [`${where} must be a list, got ${describe(value)}`];
      return value.flatMap((item, index) => valueProblems(item, spec.items, itemLabel(where, item, index)));
    case 'record':
      if (!isObject(value)) return [`${where} must be an object, got ${describe(value)}`];
      return Object.entries(value).flatMap(([key, item]) => valueProblems(item, spec.values, spec.label ? spec.label(key) : `${where}.${key}`));
    case 'object':
      if (!isObject(value)) return [`${where} must be an object, got ${describe(value)}`];
      return fieldProblems(value, spec.fields, where);
    case 'variants': {
      if (!isObject(value)) return [`${where} must be an object, got ${describe(value)}`];
      const tag = value[spec.tag];
      const names = Object.keys(spec.variants);
      const fields = typeof tag === 'string' ? spec.variants[tag] : undefined;
      if (!fields) {
        return [`${where}.${spec.tag} must be ${names.map((v) => `'${v}'`).join(' or ')}, got ${tag === undefined ? 'nothing' : describe(tag)}`];
      }
      return fieldProblems(value, fields, where);
    }
  }
}

/** Cells are named by id where they have a well-formed one. */
function itemLabel(where: string, item: unknown, index: number): string {
  if (where === 'cells' && isObject(item) && typeof item.id === 'string' && item.id !== '') return `cell \`${item.id}\``;
  return `${where}[${index}]`;
}

function fieldProblems(value: Record<string, unknown>, fields: Readonly<Record<string, FieldSpec>>, where: string): string[] {
  const known = Object.keys(fields);
  const problems: string[] = [];
  for (const key of Object.keys(value)) {
    if (!(key in fields)) problems.push(`${prefix(where)}unknown key \`${key}\`${suggestion(key, known)}`);
  }
  for (const [key, spec] of Object.entries(fields)) {
    const field = value[key];
    if (field === undefined) {
      if (!spec.optional) {
        const inside =
          spec.type === 'object'
            ? ` (an object with ${Object.entries(spec.fields)
                .filter(([, f]) => !f.optional)
                .map(([k]) => k)
                .join(', ')})`
            : '';
        problems.push(`${prefix(where)}missing \`${key}\`${inside}`);
      }
      continue;
    }
    problems.push(...valueProblems(field, spec, child(where, key)));
  }
  return problems;
}

/**
 * Unknown keys (with a did-you-mean), missing required fields and wrong types, one line each.
 * Values are not interpreted here; that is `fleetProblems`' job once the structure is right.
 */
export function structureProblems(input: unknown): string[] {
  if (!isObject(input)) return [`the default export must be the fleet object (\`export default defineFleet({...})\`), got ${describe(input)}`];
  return fieldProblems(input, FLEET_SCHEMA, '');
}
