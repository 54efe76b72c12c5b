import { GrantedQuotas, LimitId, LIMITS, limitValue } from './quotas';
import { literalName, policySize, renderForSize } from './render';

interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly Metadata?: Record<string, unknown>;
}

export interface CfnTemplate {
  readonly Resources?: Record<string, CfnResource>;
  readonly Outputs?: Record<string, unknown>;
  readonly Parameters?: Record<string, unknown>;
}

/** One written template: a stack's, or a nested stack's with the resource in its parent that deploys it. */
export interface TemplateUnderCheck {
  /** The stack as a reader finds it: `orders-pipeline/routers-eu-west-1/router-eu-west-1`, or that plus `/CellLinks1` for a nested stack. */
  readonly stack: string;
  readonly template: CfnTemplate;
  /** Size of the template file as written (what CloudFormation is handed). */
  readonly bytes: number;
  /** For a nested stack: the parent's template and the AWS::CloudFormation::Stack resource in it. */
  readonly parent?: { readonly template: TemplateUnderCheck; readonly resource: string };
  /**
   * A stack of a pipeline stage: CodePipeline's CloudFormation action hands its template over
   * (`deployActionTemplateBytes`); its nested stacks' templates CloudFormation reads from S3 itself.
   * @default false - deployed with `cdk deploy` (the pipeline stack, its support stacks, a fleet without a pipeline)
   */
  readonly deployedByPipeline?: boolean;
}

/** One limit a template passes. */
export interface LimitFinding {
  readonly stack: string;
  /** Logical id of the resource (or `template` for the template as a whole). */
  readonly resource: string;
  /** What was measured: `policy document`, `resources`, `Stages`. */
  readonly measured: string;
  readonly size: number;
  readonly limit: LimitId;
  /** The value held to: AWS's, or the granted quota for an adjustable one. */
  readonly value: number;
}

/** `<stack>: <resource> <measured> is <size> <unit>; <limit> is <value> (<page>)`. */
export function describeFinding(f: LimitFinding): string {
  const limit = LIMITS[f.limit];
  return `${f.stack}: ${f.resource} ${f.measured} is ${f.size} ${limit.unit}; ${limit.what} is at most ${f.value}${limit.adjustable ? ' (the quota declared; adjustable)' : ''} (${limit.source})`;
}

const POLICY_DOCUMENTS: Readonly<Record<string, { readonly property: string; readonly limit: LimitId }>> = {
  'AWS::IAM::ManagedPolicy': { property: 'PolicyDocument', limit: 'managedPolicy' },
  'AWS::S3::BucketPolicy': { property: 'PolicyDocument', limit: 'bucketPolicy' },
  'AWS::KMS::Key': { property: 'KeyPolicy', limit: 'keyPolicy' },
  'AWS::SNS::TopicPolicy': { property: 'PolicyDocument', limit: 'topicPolicy' },
  'AWS::SQS::QueuePolicy': { property: 'PolicyDocument', limit: 'queuePolicy' },
};

const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);
/** The logical id a `{ Ref }` or `{ Fn::GetAtt: [id, …] }` points at, else the value as JSON. */
function target(v: unknown): string {
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.Ref === 'string') return o.Ref;
    if (Array.isArray(o['Fn::GetAtt'])) return String(o['Fn::GetAtt'][0]);
  }
  return JSON.stringify(v);
}

/** Every limit one template passes, on its own (limits that span templates: `assemblyFindings`). */
export function templateFindings(t: TemplateUnderCheck, quotas: GrantedQuotas = {}): LimitFinding[] {
  const findings: LimitFinding[] = [];
  const over = (resource: string, measured: string, size: number, limit: LimitId) => {
    const value = limitValue(limit, quotas);
    if (size > value) findings.push({ stack: t.stack, resource, measured, size, limit, value });
  };
  const resources = t.template.Resources ?? {};
  over('template', 'body', t.bytes, 'templateBytes');
  if (t.deployedByPipeline && !t.parent) over('template', 'body', t.bytes, 'deployActionTemplateBytes');
  over('template', 'resources', Object.keys(resources).length, 'resources');
  over('template', 'outputs', Object.keys(t.template.Outputs ?? {}).length, 'outputs');
  over('template', 'parameters', Object.keys(t.template.Parameters ?? {}).length, 'parameters');

  const inlineByRole = new Map<string, number>();
  const managedByRole = new Map<string, number>();
  const rulesBySecurityGroup = new Map<string, { ingress: number; egress: number }>();
  const rules = (group: string) => rulesBySecurityGroup.get(group) ?? rulesBySecurityGroup.set(group, { ingress: 0, egress: 0 }).get(group)!;
  for (const [id, r] of Object.entries(resources)) {
    const p = r.Properties ?? {};
    const document = POLICY_DOCUMENTS[r.Type];
    if (document) over(id, 'policy document', policySize(p[document.property]), document.limit);
    switch (r.Type) {
      case 'AWS::IAM::ManagedPolicy':
        for (const role of asArray(p.Roles)) managedByRole.set(target(role), (managedByRole.get(target(role)) ?? 0) + 1);
        checkName(id, p.ManagedPolicyName, 'policyName');
        break;
      case 'AWS::IAM::Policy': {
        const size = policySize(p.PolicyDocument);
        for (const role of asArray(p.Roles)) inlineByRole.set(target(role), (inlineByRole.get(target(role)) ?? 0) + size);
        checkName(id, p.PolicyName, 'policyName');
        break;
      }
      case 'AWS::IAM::Role': {
        const size = asArray(p.Policies).reduce<number>((sum, pol) => sum + policySize((pol as { PolicyDocument: unknown }).PolicyDocument), 0);
        if (size > 0) inlineByRole.set(id, (inlineByRole.get(id) ?? 0) + size);
        const attached = asArray(p.ManagedPolicyArns).length;
        if (attached > 0) managedByRole.set(id, (managedByRole.get(id) ?? 0) + attached);
        over(id, 'trust policy', policySize(p.AssumeRolePolicyDocument), 'trustPolicy');
        checkName(id, p.RoleName, 'roleName');
        break;
      }
      case 'AWS::EC2::SecurityGroup':
        rules(id).ingress += asArray(p.SecurityGroupIngress).length;
        rules(id).egress += asArray(p.SecurityGroupEgress).length;
        break;
      case 'AWS::EC2::SecurityGroupIngress':
        rules(target(p.GroupId)).ingress += 1;
        break;
      case 'AWS::EC2::SecurityGroupEgress':
        rules(target(p.GroupId)).egress += 1;
        break;
      case 'AWS::CloudWatch::Dashboard':
        over(id, 'widgets', dashboardWidgets(p.DashboardBody), 'dashboardWidgets');
        break;
      case 'AWS::CloudWatch::CompositeAlarm':
        over(id, 'AlarmRule', String(renderForSize(p.AlarmRule)).length, 'compositeAlarmRule');
        break;
      case 'AWS::SSM::Parameter': {
        const advanced = p.Tier === 'Advanced';
        const size = String(renderForSize(p.Value)).length;
        if (!advanced) over(id, 'Value', size, 'ssmParameterValue');
        else if (size > 8_192)
          findings.push({ stack: t.stack, resource: id, measured: 'Value (advanced tier)', size, limit: 'ssmParameterValue', value: 8_192 });
        break;
      }
      case 'AWS::Lambda::Function': {
        const variables = (p.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
        const size = Object.entries(variables).reduce((sum, [k, v]) => sum + k.length + String(renderForSize(v)).length, 0);
        over(id, 'environment variables', size, 'lambdaEnvironment');
        break;
      }
      case 'AWS::CodePipeline::Pipeline': {
        const stages = asArray(p.Stages) as { Name?: string; Actions?: unknown[] }[];
        over(id, 'Stages', stages.length, 'pipelineStages');
        for (const stage of stages) over(`${id} stage ${stage.Name}`, 'Actions', asArray(stage.Actions).length, 'actionsPerStage');
        break;
      }
      case 'AWS::CodeBuild::Project':
        if (typeof p.TimeoutInMinutes === 'number') over(id, 'TimeoutInMinutes', p.TimeoutInMinutes, 'codeBuildTimeout');
        break;
    }
  }
  for (const [role, count] of managedByRole) over(`role ${role}`, 'managed policies attached', count, 'managedPoliciesPerRole');
  for (const [role, size] of inlineByRole) over(`role ${role}`, 'inline policies', size, 'roleInlinePolicies');
  for (const [group, { ingress, egress }] of rulesBySecurityGroup) {
    over(`security group ${group}`, 'inbound rules', ingress, 'securityGroupRules');
    over(`security group ${group}`, 'outbound rules', egress, 'securityGroupRules');
  }
  return findings;

  function checkName(id: string, name: unknown, limit: 'roleName' | 'policyName') {
    const literal = literalName(name);
    if (literal !== undefined) over(id, `name \`${literal}\``, literal.length, limit);
  }
}

/** Widgets in a dashboard body (a JSON string, or a Fn::Join that renders to one). */
function dashboardWidgets(body: unknown): number {
  const rendered = String(renderForSize(body));
  try {
    return asArray((JSON.parse(rendered) as { widgets?: unknown[] }).widgets).length;
  } catch {
    // A token inside a number position leaves it unparseable: count the widgets' own type fields.
    return (rendered.match(/\{"type":"/g) ?? []).length;
  }
}

/**
 * The VPC an interface endpoint is in, named from the stack that owns the VPC: a nested stack's
 * `VpcId` is a parameter, which its parent sets to a reference to the VPC.
 */
function vpcOf(t: TemplateUnderCheck, vpcId: unknown): string {
  const ref = target(vpcId);
  if (t.parent && t.template.Parameters?.[ref] !== undefined) {
    const stackResource = t.parent.template.template.Resources?.[t.parent.resource];
    const passed = (stackResource?.Properties?.Parameters as Record<string, unknown> | undefined)?.[ref];
    if (passed !== undefined) return vpcOf(t.parent.template, passed);
  }
  return `${t.stack}/${ref}`;
}

/** Limits that span templates: interface endpoints per VPC, counted over a stack and its nested stacks. */
export function assemblyFindings(templates: readonly TemplateUnderCheck[], quotas: GrantedQuotas = {}): LimitFinding[] {
  const endpoints = new Map<string, number>();
  for (const t of templates) {
    for (const r of Object.values(t.template.Resources ?? {})) {
      if (r.Type !== 'AWS::EC2::VPCEndpoint' || (r.Properties?.VpcEndpointType ?? 'Gateway') !== 'Interface') continue;
      const vpc = vpcOf(t, r.Properties?.VpcId);
      endpoints.set(vpc, (endpoints.get(vpc) ?? 0) + 1);
    }
  }
  const value = limitValue('interfaceEndpointsPerVpc', quotas);
  return [...endpoints]
    .filter(([, n]) => n > value)
    .map(([vpc, n]) => {
      const at = vpc.lastIndexOf('/');
      return {
        stack: vpc.slice(0, at),
        resource: `VPC ${vpc.slice(at + 1)}`,
        measured: 'interface endpoints',
        size: n,
        limit: 'interfaceEndpointsPerVpc' as const,
        value,
      };
    });
}
