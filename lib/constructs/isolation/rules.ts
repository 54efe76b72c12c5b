import { alarmOwner, cellsNamedIn, cellsOverlapping, FleetFacts, hasKey, ResourceView, StackView, stringsIn } from './facts';
import { routerConfigProblems } from './router-config';

/** What a rule sees besides the resource and its stack. */
export interface RuleContext {
  readonly facts: FleetFacts;
  /** The HAProxy configuration router tasks run (rendered on first use); undefined when none is known. */
  readonly routerConfig: () => string | undefined;
}

/**
 * A rule: a pure function of one resource, its stack and the fleet, returning one short finding
 * id per problem (`cell:eu-2`, `import`, ...) and nothing when the resource complies.
 */
export type IsolationPredicate = (resource: ResourceView, stack: StackView, context: RuleContext) => string[];

export interface IsolationRule {
  /** `CellIsolation-<id>` in reports and acknowledgments. */
  readonly id: string;
  readonly info: string;
  readonly explanation: string;
  readonly check: IsolationPredicate;
}

const ACCOUNT = /(?<![0-9A-Za-z])\d{12}(?![0-9A-Za-z])/g;

function cellOf(stack: StackView): string | undefined {
  return stack.role.kind === 'cell' ? stack.role.cellId : undefined;
}

/** A `Ref` or `Fn::GetAtt` of `logicalId` anywhere in `value`. */
function refersTo(value: unknown, logicalId: string): boolean {
  if (Array.isArray(value)) return value.some((v) => refersTo(v, logicalId));
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (o.Ref === logicalId) return true;
    if (Array.isArray(o['Fn::GetAtt']) && o['Fn::GetAtt'][0] === logicalId) return true;
    return Object.values(o).some((v) => refersTo(v, logicalId));
  }
  return false;
}

const isNumber = (v: unknown) => typeof v === 'number' || (typeof v === 'string' && /^\d+(\.\d+)?$/.test(v));
const asArray = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Policy statements anywhere in a value (key policies, bucket policies, role policies ...). */
function statementsIn(value: unknown): Record<string, unknown>[] {
  if (Array.isArray(value)) return value.flatMap(statementsIn);
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.Effect === 'string' && ('Action' in o || 'NotAction' in o)) return [o];
    return Object.values(o).flatMap(statementsIn);
  }
  return [];
}

/**
 * CI1: a cell references nothing of another cell or of a shared resource: no `Fn::ImportValue`
 * (cells export nothing to each other), no name or account of another cell, no resource ARN in an
 * account that is not the cell's own. Allowed: the router account as the principal of the cell's
 * endpoint service, and the tooling account as the principal trusted by a role (the pipeline's
 * read-only bake watcher), since those are how the router and the pipeline reach a cell.
 */
export const noSharedReference: IsolationPredicate = (resource, stack, { facts }) => {
  const self = cellOf(stack);
  if (!self) return [];
  const scanned = { Properties: resource.properties, UpdatePolicy: resource.updatePolicy };
  const found = new Set<string>();
  if (hasKey(scanned, 'Fn::ImportValue')) found.add('import');
  for (const { path, value } of stringsIn(scanned)) {
    for (const id of cellsNamedIn(facts, value)) if (id !== self) found.add(`cell:${id}`);
    for (const account of value.match(ACCOUNT) ?? []) {
      if (account === stack.account) continue;
      const other = facts.cells.find((c) => c.account === account);
      if (other) {
        found.add(`cell:${other.id}`);
      } else if (account === facts.routerAccount) {
        if (!(resource.type === 'AWS::EC2::VPCEndpointServicePermissions' && path.startsWith('/Properties/AllowedPrincipals')))
          found.add('account:router');
      } else if (account === facts.toolingAccount) {
        if (!(resource.type === 'AWS::IAM::Role' && path.startsWith('/Properties/AssumeRolePolicyDocument'))) found.add('account:tooling');
      } else if (new RegExp(`arn:[^:]+:[^:]*:[^:]*:${account}:(?!root$)`).test(value)) {
        // An AWS service account as a principal (`:root`, e.g. ELB log delivery) is no shared resource.
        found.add(`account:${account}`);
      }
    }
  }
  return [...found];
};

/** CI2: every taggable resource of a cell carries `cell` = its cell id and `app` = the app. */
export const cellTags: IsolationPredicate = (resource, stack, { facts }) => {
  const self = cellOf(stack);
  if (!self || resource.tags === undefined) return [];
  const found: string[] = [];
  if (resource.tags.cell !== self) found.push('tag:cell');
  if (resource.tags.app !== facts.app) found.push('tag:app');
  return found;
};

/** The alarm name a value denotes: a literal, or a `Ref` to an alarm of the same stack. */
function alarmName(value: unknown, stack: StackView): string | undefined {
  if (typeof value === 'string') return value;
  const ref = (value as { Ref?: unknown } | undefined)?.Ref;
  if (typeof ref !== 'string') return undefined;
  const alarm = stack.resources.get(ref);
  const name = alarm?.properties.AlarmName;
  return alarm && /^AWS::CloudWatch::(Composite)?Alarm$/.test(alarm.type) && typeof name === 'string' ? name : undefined;
}

function foreignAlarms(values: unknown[], stack: StackView, facts: FleetFacts, self: string): string[] {
  return values.flatMap((v) => {
    const name = alarmName(v, stack);
    if (name === undefined) return ['alarm:unresolved'];
    return alarmOwner(facts, name) === self ? [] : [`alarm:${name}`];
  });
}

/**
 * CI3: a cell's capacity is bounded: its ECS service scales to a fixed maximum, its Auto Scaling
 * group has a fixed maximum size, its database a fixed class (or a fixed serverless maximum), and
 * its load balancer a WAF rate rule per tenant (a rate-based rule keyed on a request header).
 */
export const boundedCapacity: IsolationPredicate = (resource, stack) => {
  if (!cellOf(stack)) return [];
  const p = resource.properties;
  const all = [...stack.resources.values()];
  switch (resource.type) {
    case 'AWS::ECS::Service': {
      const targets = all.filter(
        (r) => r.type === 'AWS::ApplicationAutoScaling::ScalableTarget' && refersTo(r.properties.ResourceId, resource.logicalId),
      );
      return targets.some((t) => !isNumber(t.properties.MaxCapacity)) ? ['max-capacity'] : [];
    }
    case 'AWS::AutoScaling::AutoScalingGroup':
      return isNumber(p.MaxSize) ? [] : ['max-size'];
    case 'AWS::RDS::DBInstance': {
      if (typeof p.DBInstanceClass !== 'string') return ['instance-class'];
      if (p.DBInstanceClass !== 'db.serverless') return [];
      const clusters = all.filter((r) => r.type === 'AWS::RDS::DBCluster' && refersTo(p.DBClusterIdentifier, r.logicalId));
      return clusters.every((c) => isNumber((c.properties.ServerlessV2ScalingConfiguration as Record<string, unknown> | undefined)?.MaxCapacity)) &&
        clusters.length > 0
        ? []
        : ['serverless-max'];
    }
    case 'AWS::RDS::DBCluster': {
      const v2 = p.ServerlessV2ScalingConfiguration as Record<string, unknown> | undefined;
      const v1 = p.ScalingConfiguration as Record<string, unknown> | undefined;
      if (v2 && !isNumber(v2.MaxCapacity)) return ['serverless-max'];
      if (p.EngineMode === 'serverless' && !isNumber(v1?.MaxCapacity)) return ['serverless-max'];
      return [];
    }
    case 'AWS::ElasticLoadBalancingV2::LoadBalancer': {
      if (p.Type !== undefined && p.Type !== 'application') return [];
      const acls = all
        .filter((r) => r.type === 'AWS::WAFv2::WebACLAssociation' && refersTo(r.properties.ResourceArn, resource.logicalId))
        .flatMap((a) => all.filter((r) => r.type === 'AWS::WAFv2::WebACL' && refersTo(a.properties.WebACLArn, r.logicalId)));
      const perTenant = acls.some((acl) =>
        asArray(acl.properties.Rules).some((rule) => {
          const rate = ((rule as Record<string, unknown>).Statement as Record<string, unknown> | undefined)?.RateBasedStatement as
            Record<string, unknown> | undefined;
          return (
            rate !== undefined &&
            isNumber(rate.Limit) &&
            rate.AggregateKeyType === 'CUSTOM_KEYS' &&
            JSON.stringify(rate.CustomKeys ?? []).includes('"Header"')
          );
        }),
      );
      return perTenant ? [] : ['per-tenant-waf'];
    }
    default:
      return [];
  }
};

/**
 * CI4: every deployable unit of a cell rolls back on that cell's own alarms: an ECS service through
 * its circuit breaker and deployment alarms, an Auto Scaling group through instance refresh alarms;
 * every alarm named there belongs to the cell (`<app>-<cell>-...`).
 */
export const cellScopedRollback: IsolationPredicate = (resource, stack, { facts }) => {
  const self = cellOf(stack);
  if (!self) return [];
  if (resource.type === 'AWS::ECS::Service') {
    const config = (resource.properties.DeploymentConfiguration ?? {}) as Record<string, Record<string, unknown> | undefined>;
    const found: string[] = [];
    const controller = (resource.properties.DeploymentController as Record<string, unknown> | undefined)?.Type;
    if (controller !== undefined && controller !== 'ECS') found.push(`controller:${String(controller)}`);
    const breaker = config.DeploymentCircuitBreaker;
    if (breaker?.Enable !== true || breaker?.Rollback !== true) found.push('circuit-breaker');
    const alarms = config.Alarms;
    const names = asArray(alarms?.AlarmNames);
    if (alarms?.Enable !== true || alarms?.Rollback !== true || names.length === 0) found.push('deployment-alarms');
    return [...found, ...foreignAlarms(names, stack, facts, self)];
  }
  if (resource.type === 'AWS::AutoScaling::AutoScalingGroup') {
    const refresh = resource.updatePolicy?.AutoScalingInstanceRefresh as { Preferences?: { AlarmSpecification?: { Alarms?: unknown } } } | undefined;
    const alarms = asArray(refresh?.Preferences?.AlarmSpecification?.Alarms);
    if (alarms.length === 0) return ['instance-refresh-alarms'];
    return foreignAlarms(alarms, stack, facts, self);
  }
  return [];
};

/** Alarm names and bake targets of one pipeline stage: what the stage watches before it passes. */
function watchedAlarms(stage: Record<string, unknown>, stack: StackView): string[] {
  const names: string[] = [];
  for (const when of ['BeforeEntry', 'OnSuccess', 'OnFailure']) {
    for (const condition of asArray((stage[when] as Record<string, unknown> | undefined)?.Conditions)) {
      for (const rule of asArray((condition as Record<string, unknown>).Rules)) {
        const r = rule as { RuleTypeId?: { Provider?: string }; Configuration?: { AlarmName?: unknown } };
        if (r.RuleTypeId?.Provider === 'CloudWatchAlarm')
          names.push(
            ...String(r.Configuration?.AlarmName ?? '')
              .split(',')
              .map((n) => n.trim())
              .filter(Boolean),
          );
      }
    }
  }
  for (const action of asArray(stage.Actions)) {
    const a = action as { ActionTypeId?: { Provider?: string }; Configuration?: { ProjectName?: unknown } };
    if (a.ActionTypeId?.Provider !== 'CodeBuild') continue;
    const ref = (a.Configuration?.ProjectName as { Ref?: string } | undefined)?.Ref;
    const project = ref ? stack.resources.get(ref) : undefined;
    // A bake step lists its targets as bake_targets=('cell account region alarm role' ...) (lib/constructs/pipeline/bake.ts);
    // other lists in the same step (the protect step's stacks) are not alarms.
    for (const { value } of stringsIn(project?.properties.Source)) {
      for (const list of value.matchAll(/bake_targets=\(([^)]*)\)/g)) {
        for (const m of list[1].matchAll(/'(\S+) (\d{12}) ([a-z0-9-]+) (\S+) (\S+)'/g)) names.push(m[4]);
      }
    }
  }
  return names;
}

/**
 * CI5: every pipeline stage watches only the alarms of the cells it deploys: a wave gated on a
 * fleet-wide alarm (or another wave's cell) stops or rolls back for a problem it did not cause.
 */
export const waveWatchesOwnCells: IsolationPredicate = (resource, stack, { facts }) => {
  if (resource.type !== 'AWS::CodePipeline::Pipeline') return [];
  const found: string[] = [];
  for (const stage of asArray(resource.properties.Stages) as Record<string, unknown>[]) {
    const deployed = new Set(
      asArray(stage.Actions).flatMap((action) => {
        const a = action as { ActionTypeId?: { Provider?: string }; Configuration?: { StackName?: unknown } };
        return a.ActionTypeId?.Provider === 'CloudFormation' && typeof a.Configuration?.StackName === 'string'
          ? cellsNamedIn(facts, a.Configuration.StackName)
          : [];
      }),
    );
    for (const name of watchedAlarms(stage, stack)) {
      const owner = alarmOwner(facts, name);
      if ((owner === undefined && deployed.size > 0) || (owner !== undefined && !deployed.has(owner))) found.push(`${String(stage.Name)}:${name}`);
    }
  }
  return found;
};

/**
 * CI6: a router task runs a configuration with no per-request logic beyond key extraction, hashing
 * and lookup, and no retry or redispatch (checked on the generated HAProxy configuration).
 */
export const routerRoutesOnly: IsolationPredicate = (resource, stack, { routerConfig }) => {
  if (stack.role.kind !== 'router' || resource.type !== 'AWS::ECS::TaskDefinition') return [];
  const runsHaproxy = asArray(resource.properties.ContainerDefinitions).some((c) => (c as { Name?: unknown }).Name === 'haproxy');
  if (!runsHaproxy) return [];
  const config = routerConfig();
  if (config === undefined) return ['no-config'];
  return [...new Set(routerConfigProblems(config).map((p) => p.code))];
};

/**
 * CI7: nothing in a cell can assume a role in another account, and no policy in a cell names a
 * principal of another cell's account: a compromised or broken cell cannot act in its neighbours.
 */
export const noCrossCellAssume: IsolationPredicate = (resource, stack, { facts }) => {
  const self = cellOf(stack);
  if (!self) return [];
  const found = new Set<string>();
  for (const statement of statementsIn(resource.properties)) {
    if (statement.Effect !== 'Allow') continue;
    for (const { value } of stringsIn(statement.Principal)) {
      for (const account of value.match(ACCOUNT) ?? []) {
        const other = facts.cells.find((c) => c.account === account && c.id !== self);
        if (other) found.add(`principal:${other.id}`);
      }
    }
    if (statement.Principal !== undefined) continue;
    const actions = asArray(statement.Action).filter((a): a is string => typeof a === 'string');
    if (!actions.some((a) => /^(\*|sts:\*|sts:AssumeRole\w*)$/i.test(a))) continue;
    for (const target of asArray(statement.Resource)) {
      if (target === '*') found.add('assume:*');
      else if (typeof target === 'string') {
        for (const account of target.match(ACCOUNT) ?? []) if (account !== stack.account) found.add(`assume:${account}`);
      }
    }
  }
  return [...found];
};

/** CI8: no network path from a cell to another: no peering, no transit gateway, no rule to another cell's range. */
export const noCellToCellNetwork: IsolationPredicate = (resource, stack, { facts }) => {
  const self = cellOf(stack);
  if (!self) return [];
  if (/^AWS::EC2::(VPCPeeringConnection|TransitGatewayAttachment|TransitGatewayVpcAttachment)$/.test(resource.type))
    return [resource.type.slice('AWS::EC2::'.length)];
  const p = resource.properties;
  if (resource.type === 'AWS::EC2::Route' && (p.VpcPeeringConnectionId !== undefined || p.TransitGatewayId !== undefined)) return ['route'];
  const rules =
    resource.type === 'AWS::EC2::SecurityGroup'
      ? [...asArray(p.SecurityGroupIngress), ...asArray(p.SecurityGroupEgress)]
      : /^AWS::EC2::SecurityGroup(Ingress|Egress)$/.test(resource.type)
        ? [p]
        : [];
  return [
    ...new Set(
      rules.flatMap((r) => {
        const cidr = (r as { CidrIp?: unknown }).CidrIp;
        return typeof cidr === 'string' ? cellsOverlapping(facts, self, cidr).map((id) => `cidr:${id}`) : [];
      }),
    ),
  ];
};

/** The pack's rules, in report order. */
export const ISOLATION_RULES: readonly IsolationRule[] = [
  {
    id: 'CI1',
    check: noSharedReference,
    info: 'A cell references another cell or a shared resource (import, name, account or ARN).',
    explanation:
      "Cells share nothing but the router; a shared key, bucket, topic, log group, security group, role or output is a path for one cell's failure to reach the others.",
  },
  {
    id: 'CI2',
    check: cellTags,
    info: 'A cell resource lacks the `cell` / `app` tags.',
    explanation: 'Every cell resource carries `cell` = its cell id and `app`, so cost, inventory and access can be scoped per cell.',
  },
  {
    id: 'CI3',
    check: boundedCapacity,
    info: 'A cell has unbounded capacity (compute maximum, database class or per-tenant WAF rule missing).',
    explanation: 'A cell has a maximum size it was tested to; without a bound one tenant or one bug grows a cell past what it was tested for.',
  },
  {
    id: 'CI4',
    check: cellScopedRollback,
    info: "A deployable unit of a cell is not rolled back by that cell's own alarms.",
    explanation: 'A bad change must roll back on the health of the cell it lands in, and only on that.',
  },
  {
    id: 'CI5',
    check: waveWatchesOwnCells,
    info: "A pipeline wave watches an alarm that is not one of its own cells'.",
    explanation: 'A wave gated on a fleet-wide alarm deploys to every cell at once in effect, and rolls back for problems it did not cause.',
  },
  {
    id: 'CI6',
    check: routerRoutesOnly,
    info: 'The router configuration does more than key extraction, hashing and lookup, or retries.',
    explanation: 'Logic in the router is shared by every cell; a retry or redispatch can send one request into a second cell.',
  },
  {
    id: 'CI7',
    check: noCrossCellAssume,
    info: 'A cell can assume a role in another account, or grants a principal of another cell.',
    explanation: "Nothing in one cell's account may act in another cell's account.",
  },
  {
    id: 'CI8',
    check: noCellToCellNetwork,
    info: 'A cell has a network path to another cell (peering, transit gateway, or a rule to its range).',
    explanation: 'Cells never call each other; only the router reaches a cell, through its endpoint service.',
  },
];
