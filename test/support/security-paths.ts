/**
 * The paths a Network Load Balancer needs, checked against the security groups as Elastic Load
 * Balancing applies them (NLB User Guide, "Update the security groups for your Network Load
 * Balancer"; "Target groups for your Network Load Balancers", health checks):
 * - an NLB with security groups sends traffic and health checks only where an outbound rule of one
 *   of its groups allows (to the target's group, or to an address range); an NLB without security
 *   groups filters nothing, and its targets see its private addresses;
 * - a target admits them only where an inbound rule of one of its groups allows (from the NLB's
 *   group, or from a range, which an NLB without groups needs);
 * - clients reach the listener only where an inbound rule allows, except PrivateLink traffic when
 *   `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic` is `off` (it is `on` unless set).
 * Templates are read as CloudFormation would wire them: `Ref`/`Fn::GetAtt` within a stack, and a
 * parameter of type `AWS::SSM::Parameter::Value<String>` to the `AWS::SSM::Parameter` of that name
 * another stack of the same region writes (how the router's group stacks reach its target groups and task group).
 */
export interface TemplateJson {
  readonly Parameters?: Record<string, { readonly Type?: string; readonly Default?: unknown }>;
  readonly Resources: Record<string, { readonly Type: string; readonly Properties?: Record<string, unknown> }>;
}

/** A resource of one stack: `stack/logicalId`. */
type Node = string;

interface Rule {
  readonly group: Node;
  readonly direction: 'in' | 'out';
  readonly protocol: string;
  readonly from: number;
  readonly to: number;
  /** Another group, or an address range (a literal or a token such as the VPC's CIDR). */
  readonly peer: { readonly group: Node } | { readonly cidr: string };
}

export interface PathCheck {
  /** What the path is for: `traffic` or `health check`. */
  readonly purpose: 'traffic' | 'health check';
  readonly port: number;
  /** Whether the NLB's outbound rules let it out (always, without security groups). */
  readonly leavesLoadBalancer: boolean;
  /** Whether the target's inbound rules admit it; `undefined` when the target's groups are not in the templates (an existing ALB). */
  readonly admittedByTarget: boolean | undefined;
}

export interface LoadBalancerPaths {
  readonly loadBalancer: Node;
  readonly scheme: string;
  readonly securityGroups: readonly Node[];
  /** Whether PrivateLink traffic is filtered by the inbound rules (`undefined`: not behind an endpoint service). */
  readonly privateLinkInboundEnforced?: boolean;
  readonly listeners: readonly {
    readonly port: number;
    /** Whether clients reach the listener: the inbound rules admit them, or nothing filters them. */
    readonly clientsAdmitted: boolean;
    readonly targets: readonly {
      readonly targetGroup: Node;
      readonly targetType: string;
      readonly targetGroups: readonly Node[];
      readonly paths: readonly PathCheck[];
    }[];
  }[];
}

const ANYWHERE = '0.0.0.0/0';

export class SecurityPaths {
  private readonly resources = new Map<Node, { Type: string; Properties: Record<string, unknown> }>();
  private readonly parameters = new Map<Node, string>();
  private readonly ssmNames = new Map<string, { stack: string; value: unknown }>();
  private readonly rules: Rule[] = [];
  private readonly regionOf: (stack: string) => string;

  /** Stacks by name, each with its region (an SSM parameter's name is the region's). */
  constructor(stacks: readonly { readonly name: string; readonly region: string; readonly template: TemplateJson }[]) {
    const regions = new Map(stacks.map((s) => [s.name, s.region]));
    this.regionOf = (stack) => regions.get(stack) ?? '';
    for (const { name: stack, template, region } of stacks) {
      for (const [id, r] of Object.entries(template.Resources)) {
        this.resources.set(`${stack}/${id}`, { Type: r.Type, Properties: r.Properties ?? {} });
        if (r.Type === 'AWS::SSM::Parameter' && typeof r.Properties?.Name === 'string')
          this.ssmNames.set(`${region} ${r.Properties.Name}`, { stack, value: r.Properties.Value });
      }
      for (const [id, p] of Object.entries(template.Parameters ?? {})) {
        if (p.Type === 'AWS::SSM::Parameter::Value<String>' && typeof p.Default === 'string') this.parameters.set(`${stack}/${id}`, p.Default);
      }
    }
    for (const [node, r] of this.resources) {
      const stack = node.split('/')[0];
      if (r.Type === 'AWS::EC2::SecurityGroup') {
        for (const [key, direction] of [
          ['SecurityGroupIngress', 'in'],
          ['SecurityGroupEgress', 'out'],
        ] as const) {
          for (const rule of (r.Properties[key] as Record<string, unknown>[] | undefined) ?? []) this.addRule(stack, node, direction, rule);
        }
      } else if (r.Type === 'AWS::EC2::SecurityGroupIngress' || r.Type === 'AWS::EC2::SecurityGroupEgress') {
        const group = this.resolve(stack, r.Properties.GroupId);
        if (group) this.addRule(stack, group, r.Type.endsWith('Ingress') ? 'in' : 'out', r.Properties);
      }
    }
  }

  /** The resource a value refers to (`Ref`, `Fn::GetAtt`, or an SSM parameter another stack writes), as `stack/logicalId`. */
  resolve(stack: string, value: unknown): Node | undefined {
    if (value === null || typeof value !== 'object') return undefined;
    const v = value as Record<string, unknown>;
    const id = typeof v.Ref === 'string' ? v.Ref : Array.isArray(v['Fn::GetAtt']) ? String(v['Fn::GetAtt'][0]) : undefined;
    if (id === undefined) return undefined;
    const node = `${stack}/${id}`;
    if (this.resources.has(node)) return node;
    const name = this.parameters.get(node);
    const written = name === undefined ? undefined : this.ssmNames.get(`${this.regionOf(stack)} ${name}`);
    return written ? this.resolve(written.stack, written.value) : undefined;
  }

  private addRule(stack: string, group: Node, direction: 'in' | 'out', rule: Record<string, unknown>): void {
    const peerGroup = this.resolve(stack, direction === 'in' ? rule.SourceSecurityGroupId : rule.DestinationSecurityGroupId);
    const cidr = rule.CidrIp ?? rule.CidrIpv6;
    const peer = peerGroup ? { group: peerGroup } : cidr !== undefined ? { cidr: typeof cidr === 'string' ? cidr : JSON.stringify(cidr) } : undefined;
    if (!peer) return;
    const protocol = String(rule.IpProtocol);
    this.rules.push({
      group,
      direction,
      protocol,
      from: protocol === '-1' ? 0 : Number(rule.FromPort),
      to: protocol === '-1' ? 65535 : Number(rule.ToPort),
      peer,
    });
  }

  /** Whether one of `groups` has a `direction` rule for TCP `port` whose peer is one of `peers`, or a range that `rangeCovers` accepts. */
  private allows(
    groups: readonly Node[],
    direction: 'in' | 'out',
    port: number,
    peers: readonly Node[],
    rangeCovers: (cidr: string) => boolean,
  ): boolean {
    return this.rules.some(
      (r) =>
        groups.includes(r.group) &&
        r.direction === direction &&
        (r.protocol === 'tcp' || r.protocol === '6' || r.protocol === '-1') &&
        r.from <= port &&
        port <= r.to &&
        ('group' in r.peer ? peers.includes(r.peer.group) : rangeCovers(r.peer.cidr)),
    );
  }

  /** Every NLB in the templates, with what its listeners, targets and health checks need and get. */
  networkLoadBalancers(): LoadBalancerPaths[] {
    const out: LoadBalancerPaths[] = [];
    for (const [node, r] of this.resources) {
      if (r.Type !== 'AWS::ElasticLoadBalancingV2::LoadBalancer' || r.Properties.Type !== 'network') continue;
      const stack = node.split('/')[0];
      const groups = ((r.Properties.SecurityGroups as unknown[] | undefined) ?? []).map(
        (g) => this.resolve(stack, g) ?? `unresolved ${JSON.stringify(g)}`,
      );
      const behindEndpointService = [...this.resources].some(
        ([n, x]) =>
          x.Type === 'AWS::EC2::VPCEndpointService' &&
          ((x.Properties.NetworkLoadBalancerArns as unknown[] | undefined) ?? []).some((a) => this.resolve(n.split('/')[0], a) === node),
      );
      const enforced = behindEndpointService ? r.Properties.EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic !== 'off' : undefined;
      const internetFacing = r.Properties.Scheme === 'internet-facing';
      // A non-/32 range stands for the VPC's own (the NLB's addresses are in it): an address token or a literal range.
      const vpcRange = (cidr: string) => cidr === ANYWHERE || !cidr.endsWith('/32');
      const listeners = [...this.resources]
        .filter(
          ([n, x]) => x.Type === 'AWS::ElasticLoadBalancingV2::Listener' && this.resolve(n.split('/')[0], x.Properties.LoadBalancerArn) === node,
        )
        .map(([n, x]) => {
          const port = Number(x.Properties.Port);
          const clientsAdmitted =
            groups.length === 0 || enforced === false || this.allows(groups, 'in', port, [], (c) => (internetFacing ? c === ANYWHERE : vpcRange(c)));
          const actions = (x.Properties.DefaultActions as Record<string, unknown>[]) ?? [];
          const targetGroups = actions.flatMap((a) => [
            ...(a.TargetGroupArn ? [a.TargetGroupArn] : []),
            ...(((a.ForwardConfig as Record<string, unknown> | undefined)?.TargetGroups as { TargetGroupArn: unknown }[] | undefined) ?? []).map(
              (t) => t.TargetGroupArn,
            ),
          ]);
          const targets = targetGroups.map((arn) => {
            const tgNode = this.resolve(n.split('/')[0], arn) ?? `unresolved ${JSON.stringify(arn)}`;
            const tg = this.resources.get(tgNode)?.Properties ?? {};
            const targetType = String(tg.TargetType ?? 'instance');
            const targetGroupsOfTarget = this.targetSecurityGroups(tgNode, targetType, tg);
            const trafficPort = Number(tg.Port);
            const healthPort = tg.HealthCheckPort === undefined || tg.HealthCheckPort === 'traffic-port' ? trafficPort : Number(tg.HealthCheckPort);
            const paths = (
              [
                ['traffic', trafficPort],
                ['health check', healthPort],
              ] as const
            ).map(([purpose, p]) => ({
              purpose,
              port: p,
              leavesLoadBalancer: groups.length === 0 || this.allows(groups, 'out', p, targetGroupsOfTarget ?? [], vpcRange),
              admittedByTarget:
                targetGroupsOfTarget === undefined
                  ? undefined
                  : this.allows(targetGroupsOfTarget, 'in', p, groups, (c) => (groups.length === 0 ? vpcRange(c) : false)),
            }));
            return { targetGroup: tgNode, targetType, targetGroups: targetGroupsOfTarget ?? [], paths };
          });
          return { port, clientsAdmitted, targets };
        });
      out.push({
        loadBalancer: node,
        scheme: String(r.Properties.Scheme),
        securityGroups: groups,
        ...(enforced === undefined ? {} : { privateLinkInboundEnforced: enforced }),
        listeners,
      });
    }
    return out;
  }

  /** The security groups of a target group's targets: an ALB of the templates, or the ECS services registering into it. */
  private targetSecurityGroups(tgNode: Node, targetType: string, tg: Record<string, unknown>): Node[] | undefined {
    const stack = tgNode.split('/')[0];
    if (targetType === 'alb') {
      const albs = ((tg.Targets as { Id: unknown }[] | undefined) ?? []).map((t) => this.resolve(stack, t.Id));
      if (albs.some((a) => a === undefined)) return undefined;
      return albs.flatMap((a) => {
        const alb = this.resources.get(a!)!;
        return ((alb.Properties.SecurityGroups as unknown[] | undefined) ?? []).map((g) => this.resolve(a!.split('/')[0], g)!).filter(Boolean);
      });
    }
    const services = [...this.resources].filter(
      ([n, x]) =>
        x.Type === 'AWS::ECS::Service' &&
        ((x.Properties.LoadBalancers as { TargetGroupArn: unknown }[] | undefined) ?? []).some(
          (l) => this.resolve(n.split('/')[0], l.TargetGroupArn) === tgNode,
        ),
    );
    if (services.length === 0) return undefined;
    return services.flatMap(([n, x]) => {
      const network = (x.Properties.NetworkConfiguration as { AwsvpcConfiguration?: { SecurityGroups?: unknown[] } } | undefined)
        ?.AwsvpcConfiguration;
      return (network?.SecurityGroups ?? []).map((g) => this.resolve(n.split('/')[0], g) ?? `unresolved ${JSON.stringify(g)}`);
    });
  }
}
