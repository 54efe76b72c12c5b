import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import * as cxapi from 'aws-cdk-lib/cx-api';
// js-yaml comes with aws-cdk-lib's tooling; only the CDK bootstrap template is YAML.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS package without type declarations
const yaml = require('js-yaml') as { load(text: string): unknown };

/**
 * An offline IAM check of what synth produced. Templates are read as CloudFormation would deploy
 * them: intrinsics (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::If …) resolve to plausible physical names
 * and ARNs (an explicit name where the template gives one, else `<stack>-<logicalId>`), roles collect
 * their identity policies (inline, AWS::IAM::Policy, customer-managed), and resources their resource
 * policies (bucket, key, queue, topic, secret policies, a role's trust policy). A request is then
 * evaluated by @cloud-copilot/iam-simulate (AGPL-3.0: a devDependency used by tests only, never shipped).
 */

type Json = any;
export type PolicyDocument = { Version?: string; Statement: Json[] };
export type Decision = 'Allowed' | 'ExplicitlyDenied' | 'ImplicitlyDenied';

/** A template in its environment, as CloudFormation would deploy it. */
export interface DeployedTemplate {
  readonly stackName: string;
  readonly account: string;
  readonly region: string;
  readonly template: Json;
  /** Parameter values (others take their Default). */
  readonly parameters?: Readonly<Record<string, string>>;
}

interface Resolved {
  readonly stack: DeployedTemplate;
  readonly logicalId: string;
  readonly type: string;
  readonly ref: string;
  readonly arn: string;
  readonly name: string;
}

export interface RoleView {
  readonly arn: string;
  readonly name: string;
  readonly account: string;
  readonly stack: string;
  readonly logicalId: string;
  readonly identityPolicies: readonly { name: string; policy: PolicyDocument }[];
  /** AWS managed policies attached (their content is not evaluated). */
  readonly awsManagedPolicies: readonly string[];
}

const PARTITION = 'aws';

/** Every stack of a synthesized assembly, nested stage assemblies included. */
export function deployedTemplates(assembly: cxapi.CloudAssembly): DeployedTemplate[] {
  const out: DeployedTemplate[] = [];
  const visit = (a: cxapi.CloudAssembly) => {
    for (const stack of a.stacks) {
      out.push({ stackName: stack.stackName, account: stack.environment.account, region: stack.environment.region, template: stack.template });
    }
    for (const nested of a.nestedAssemblies) visit(nested.nestedAssembly);
  };
  visit(assembly);
  return out;
}

/** The CDK bootstrap stack (`cdk bootstrap` of this CLI version) of one environment, with its parameters. */
export function bootstrapStack(account: string, region: string, parameters: Record<string, string>): DeployedTemplate {
  const file = path.join(path.dirname(require.resolve('aws-cdk/package.json')), 'lib', 'api', 'bootstrap', 'bootstrap-template.yaml');
  return { stackName: 'CDKToolkit', account, region, template: yaml.load(fs.readFileSync(file, 'utf8')), parameters };
}

/** A stable stand-in for the UUID CloudFormation gives a stack (its StackId's last part). */
const fakeUuid = (seed: string) =>
  createHash('sha256')
    .update(seed)
    .digest('hex')
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12}).*$/, '$1-$2-$3-$4-$5');

const lowerName = (stack: string, logicalId: string) => `${stack}-${logicalId}`.toLowerCase().slice(0, 63);

export class PolicyWorld {
  private readonly resources = new Map<string, Resolved>(); // key `${stack}|${logicalId}`
  private readonly resolving = new Set<string>();
  private readonly byArn = new Map<string, Resolved>();
  private readonly exportsByName = new Map<string, Json>();

  /**
   * `organization`: the AWS Organizations id and its member accounts, for `aws:ResourceOrgID` and
   * `aws:PrincipalOrgID` in the request context (IAM sets them when the resource's, or the caller's,
   * account is in an organization).
   */
  constructor(
    public readonly stacks: readonly DeployedTemplate[],
    private readonly organization?: { readonly id: string; readonly accounts: readonly string[] },
  ) {
    for (const stack of stacks) {
      for (const output of Object.values<Json>(stack.template.Outputs ?? {})) {
        if (output.Export?.Name) this.exportsByName.set(String(this.resolve(stack, output.Export.Name)), { stack, value: output.Value });
      }
    }
    for (const stack of stacks) {
      for (const logicalId of Object.keys(stack.template.Resources ?? {})) {
        if (!this.isCreated(stack, logicalId)) continue;
        const r = this.resource(stack, logicalId);
        this.byArn.set(r.arn, r);
      }
    }
  }

  // ---------- resolution ----------

  private isCreated(stack: DeployedTemplate, logicalId: string): boolean {
    const condition = stack.template.Resources[logicalId].Condition;
    return condition === undefined || this.condition(stack, condition);
  }

  private condition(stack: DeployedTemplate, name: string): boolean {
    const expression = stack.template.Conditions?.[name];
    if (expression === undefined) throw new Error(`${stack.stackName}: no condition ${name}`);
    return Boolean(this.resolve(stack, expression));
  }

  private parameter(stack: DeployedTemplate, name: string): Json {
    const declared = stack.template.Parameters?.[name];
    if (!declared) throw new Error(`${stack.stackName}: Ref to unknown ${name}`);
    const value = stack.parameters?.[name] ?? declared.Default;
    if (value === undefined) throw new Error(`${stack.stackName}: parameter ${name} has no value`);
    if (String(declared.Type).startsWith('AWS::SSM::Parameter::Value')) {
      // As CloudFormation resolves it at deploy time: the value of the parameter of that name that a
      // stack of the same account and region writes (the router stack for its group stacks).
      const writer = this.ssmWriter(stack, String(value));
      return writer ? this.resolve(writer.stack, writer.value) : `ssm:${value}`;
    }
    if (declared.Type === 'CommaDelimitedList' || String(declared.Type).startsWith('List<'))
      return String(value)
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
    return String(value);
  }

  private ssmWriter(reader: DeployedTemplate, name: string): { stack: DeployedTemplate; value: Json } | undefined {
    for (const stack of this.stacks) {
      if (stack.account !== reader.account || stack.region !== reader.region) continue;
      for (const r of Object.values<Json>(stack.template.Resources ?? {})) {
        if (r.Type === 'AWS::SSM::Parameter' && r.Properties?.Name === name) return { stack, value: r.Properties.Value };
      }
    }
    return undefined;
  }

  private resource(stack: DeployedTemplate, logicalId: string): Resolved {
    const key = `${stack.stackName}|${stack.account}|${stack.region}|${logicalId}`;
    const known = this.resources.get(key);
    if (known) return known;
    if (this.resolving.has(key)) throw new Error(`${stack.stackName}: circular reference through ${logicalId}`);
    const definition = stack.template.Resources?.[logicalId];
    if (!definition) throw new Error(`${stack.stackName}: reference to unknown resource ${logicalId}`);
    this.resolving.add(key);
    try {
      const props = definition.Properties ?? {};
      const prop = (p: string) => (props[p] === undefined ? undefined : String(this.resolve(stack, props[p])));
      const { account, region } = stack;
      const type: string = definition.Type;
      let name = logicalId;
      let ref = logicalId;
      let arn: string;
      switch (type) {
        case 'AWS::IAM::Role': {
          name = prop('RoleName') ?? `${stack.stackName}-${logicalId}`.slice(0, 64);
          ref = name;
          arn = `arn:${PARTITION}:iam::${account}:role${prop('Path') ?? '/'}${name}`;
          break;
        }
        case 'AWS::IAM::ManagedPolicy':
          name = prop('ManagedPolicyName') ?? `${stack.stackName}-${logicalId}`;
          arn = ref = `arn:${PARTITION}:iam::${account}:policy${prop('Path') ?? '/'}${name}`;
          break;
        case 'AWS::S3::Bucket':
          name = ref = prop('BucketName') ?? lowerName(stack.stackName, logicalId);
          arn = `arn:${PARTITION}:s3:::${name}`;
          break;
        case 'AWS::CloudWatch::Alarm':
        case 'AWS::CloudWatch::CompositeAlarm':
          name = ref = prop('AlarmName') ?? `${stack.stackName}-${logicalId}`;
          arn = `arn:${PARTITION}:cloudwatch:${region}:${account}:alarm:${name}`;
          break;
        case 'AWS::SQS::Queue':
          name = prop('QueueName') ?? `${stack.stackName}-${logicalId}`;
          ref = `https://sqs.${region}.amazonaws.com/${account}/${name}`;
          arn = `arn:${PARTITION}:sqs:${region}:${account}:${name}`;
          break;
        case 'AWS::SNS::Topic':
          name = prop('TopicName') ?? `${stack.stackName}-${logicalId}`;
          arn = ref = `arn:${PARTITION}:sns:${region}:${account}:${name}`;
          break;
        case 'AWS::KMS::Key':
          name = ref = `key-${logicalId}`;
          arn = `arn:${PARTITION}:kms:${region}:${account}:key/${name}`;
          break;
        case 'AWS::SecretsManager::Secret':
          name = prop('Name') ?? `${stack.stackName}-${logicalId}`;
          arn = ref = `arn:${PARTITION}:secretsmanager:${region}:${account}:secret:${name}-AbCdEf`;
          break;
        case 'AWS::Logs::LogGroup':
          name = ref = prop('LogGroupName') ?? `${stack.stackName}-${logicalId}`;
          arn = `arn:${PARTITION}:logs:${region}:${account}:log-group:${name}:*`;
          break;
        case 'AWS::ECR::Repository':
          name = ref = prop('RepositoryName') ?? lowerName(stack.stackName, logicalId);
          arn = `arn:${PARTITION}:ecr:${region}:${account}:repository/${name}`;
          break;
        case 'AWS::CodeBuild::Project':
          name = ref = prop('Name') ?? `${stack.stackName}-${logicalId}`;
          arn = `arn:${PARTITION}:codebuild:${region}:${account}:project/${name}`;
          break;
        case 'AWS::SSM::Parameter':
          name = ref = prop('Name') ?? `${stack.stackName}-${logicalId}`;
          arn = `arn:${PARTITION}:ssm:${region}:${account}:parameter/${name.replace(/^\//, '')}`;
          break;
        default: {
          const [, service = 'custom', kind = 'resource'] = type.toLowerCase().split('::');
          arn = `arn:${PARTITION}:${service}:${region}:${account}:${kind}/${stack.stackName}/${logicalId}`;
        }
      }
      const resolved: Resolved = { stack, logicalId, type, ref, arn, name };
      this.resources.set(key, resolved);
      return resolved;
    } finally {
      this.resolving.delete(key);
    }
  }

  /** Resolves every intrinsic in `value` for `stack`; AWS::NoValue entries disappear. */
  public resolve(stack: DeployedTemplate, value: Json): Json {
    const NO_VALUE = Symbol.for('NoValue');
    const go = (v: Json): Json => {
      if (Array.isArray(v)) return v.map(go).filter((x) => x !== NO_VALUE);
      if (v === null || typeof v !== 'object') return v;
      const keys = Object.keys(v);
      if (keys.length === 1) {
        const [k] = keys;
        const arg = v[k];
        switch (k) {
          case 'Ref': {
            switch (arg) {
              case 'AWS::AccountId':
                return stack.account;
              case 'AWS::Region':
                return stack.region;
              case 'AWS::Partition':
                return PARTITION;
              case 'AWS::URLSuffix':
                return 'amazonaws.com';
              case 'AWS::StackName':
                return stack.stackName;
              case 'AWS::StackId':
                return `arn:${PARTITION}:cloudformation:${stack.region}:${stack.account}:stack/${stack.stackName}/${fakeUuid(`${stack.account}/${stack.region}/${stack.stackName}`)}`;
              case 'AWS::NotificationARNs':
                return [];
              case 'AWS::NoValue':
                return NO_VALUE;
              default:
                if (stack.template.Resources?.[arg]) return this.resource(stack, arg).ref;
                return this.parameter(stack, arg);
            }
          }
          case 'Fn::GetAtt': {
            const [logicalId, attribute] = Array.isArray(arg) ? arg : String(arg).split('.');
            const r = this.resource(stack, logicalId);
            if (attribute === 'Arn') return r.arn;
            if (['QueueName', 'TopicName', 'Name', 'RoleId'].includes(attribute)) return r.name;
            return `${r.ref}.${attribute}`;
          }
          case 'Fn::Join':
            return go(arg[1]).map(String).join(arg[0]);
          case 'Fn::Select':
            return go(arg[1])[Number(go(arg[0]))];
          case 'Fn::Split':
            return String(go(arg[1])).split(arg[0]);
          case 'Fn::If':
            return go(this.condition(stack, arg[0]) ? arg[1] : arg[2]);
          case 'Fn::Equals':
            return JSON.stringify(go(arg[0])) === JSON.stringify(go(arg[1]));
          case 'Fn::Not':
            return !go(arg[0]);
          case 'Fn::And':
            return arg.every((c: Json) => go(c));
          case 'Fn::Or':
            return arg.some((c: Json) => go(c));
          case 'Condition':
            return this.condition(stack, arg);
          case 'Fn::ImportValue': {
            const found = this.exportsByName.get(String(go(arg)));
            if (!found) throw new Error(`${stack.stackName}: no export ${go(arg)}`);
            return this.resolve(found.stack, found.value);
          }
          case 'Fn::Sub': {
            const [text, vars] = Array.isArray(arg) ? arg : [arg, {}];
            return String(text).replace(/\$\{([^}]+)\}/g, (_m: string, name: string) => {
              if (vars[name] !== undefined) return String(go(vars[name]));
              if (name.includes('.')) return String(go({ 'Fn::GetAtt': name.split('.') }));
              return String(go({ Ref: name }));
            });
          }
          default:
            if (k.startsWith('Fn::')) throw new Error(`${stack.stackName}: cannot resolve ${k}`);
        }
      }
      const out: Json = {};
      for (const [k, x] of Object.entries(v)) {
        const r = go(x);
        if (r !== NO_VALUE) out[k] = r;
      }
      return out;
    };
    return go(value);
  }

  // ---------- lookups ----------

  private all(type: string): Resolved[] {
    return [...this.byArn.values()].filter((r) => r.type === type);
  }

  /** Each resource's resolved properties, resolved once: the templates do not change once synthesized. */
  private readonly resolvedProps = new Map<Resolved, Json>();

  private props(r: Resolved): Json {
    let props = this.resolvedProps.get(r);
    if (props === undefined) this.resolvedProps.set(r, (props = this.resolve(r.stack, r.stack.template.Resources[r.logicalId].Properties ?? {})));
    return props;
  }

  /** Every role the assembly creates. */
  public roles(): RoleView[] {
    return this.all('AWS::IAM::Role').map((r) => this.roleView(r));
  }

  /** The role with this ARN; fails naming the roles that exist in that account. */
  public role(arn: string): RoleView {
    const r = this.byArn.get(arn);
    if (!r || r.type !== 'AWS::IAM::Role') {
      const account = arn.split(':')[4];
      throw new Error(
        `no role ${arn} in the synthesized templates (roles in ${account}: ${this.roles()
          .filter((x) => x.account === account)
          .map((x) => x.name)
          .join(', ')})`,
      );
    }
    return this.roleView(r);
  }

  /** Whether a role with this ARN exists. */
  public hasRole(arn: string): boolean {
    return this.byArn.get(arn)?.type === 'AWS::IAM::Role';
  }

  /** The ARN a `Ref`/`Fn::GetAtt` to a resource of `stackName` resolves to. */
  public arnOf(stackName: string, value: Json): string {
    const stack = this.stacks.find((s) => s.stackName === stackName);
    if (!stack) throw new Error(`no stack ${stackName}`);
    const resolved = this.resolve(stack, value);
    const byRef = [...this.byArn.values()].find((r) => r.stack === stack && (r.ref === resolved || r.arn === resolved));
    return byRef?.arn ?? String(resolved);
  }

  /** Resources of a type, with their resolved properties. */
  public resourcesOf(type: string): { arn: string; stack: DeployedTemplate; logicalId: string; name: string; properties: Json }[] {
    return this.all(type).map((r) => ({ arn: r.arn, stack: r.stack, logicalId: r.logicalId, name: r.name, properties: this.props(r) }));
  }

  private roleView(role: Resolved): RoleView {
    const props = this.props(role);
    const policies: { name: string; policy: PolicyDocument }[] = (props.Policies ?? []).map((p: Json) => ({
      name: `${role.name}/${p.PolicyName}`,
      policy: p.PolicyDocument,
    }));
    const awsManaged: string[] = [];
    for (const arn of props.ManagedPolicyArns ?? []) {
      const managed = this.byArn.get(String(arn));
      if (managed) policies.push({ name: managed.name, policy: this.props(managed).PolicyDocument });
      else awsManaged.push(String(arn));
    }
    const attachedTo = (r: Resolved) => r.stack.account === role.stack.account && (this.props(r).Roles ?? []).includes(role.ref);
    for (const r of [...this.all('AWS::IAM::Policy'), ...this.all('AWS::IAM::ManagedPolicy')].filter(attachedTo)) {
      policies.push({ name: `${r.stack.stackName}/${r.logicalId}`, policy: this.props(r).PolicyDocument });
    }
    return {
      arn: role.arn,
      name: role.name,
      account: role.stack.account,
      stack: role.stack.stackName,
      logicalId: role.logicalId,
      identityPolicies: policies,
      awsManagedPolicies: awsManaged,
    };
  }

  /** The resource policy S3, KMS, SQS, SNS, Secrets Manager or IAM (trust) evaluates for `arn`. */
  public resourcePolicy(arn: string, action: string): PolicyDocument | undefined {
    if (arn.startsWith('arn:aws:s3:::')) {
      const bucket = arn.slice('arn:aws:s3:::'.length).split('/')[0];
      const policy = this.all('AWS::S3::BucketPolicy').find((p) => this.props(p).Bucket === bucket);
      return policy && this.props(policy).PolicyDocument;
    }
    const target = this.byArn.get(arn);
    if (!target) return undefined;
    const props = this.props(target);
    switch (target.type) {
      case 'AWS::IAM::Role':
        return action.startsWith('sts:') ? props.AssumeRolePolicyDocument : undefined;
      case 'AWS::KMS::Key':
        return props.KeyPolicy;
      case 'AWS::SQS::Queue':
        return this.attachedPolicy('AWS::SQS::QueuePolicy', 'Queues', target.ref);
      case 'AWS::SNS::Topic':
        return this.attachedPolicy('AWS::SNS::TopicPolicy', 'Topics', target.ref);
      case 'AWS::SecretsManager::Secret': {
        const p = this.all('AWS::SecretsManager::ResourcePolicy').find((x) => this.props(x).SecretId === target.ref);
        return p && this.props(p).ResourcePolicy;
      }
      default:
        return undefined;
    }
  }

  private attachedPolicy(type: string, property: string, ref: string): PolicyDocument | undefined {
    const p = this.all(type).find((x) => (this.props(x)[property] ?? []).includes(ref));
    return p && this.props(p).PolicyDocument;
  }

  /** The account that owns `arn` (S3 ARNs carry none: the bucket's stack says). */
  public ownerOf(arn: string): string {
    if (arn.startsWith('arn:aws:s3:::')) {
      const bucket = arn.slice('arn:aws:s3:::'.length).split('/')[0];
      const found = this.all('AWS::S3::Bucket').find((b) => b.name === bucket);
      if (!found) throw new Error(`no bucket ${bucket} in the synthesized templates`);
      return found.stack.account;
    }
    return arn.split(':')[4];
  }

  // ---------- decisions ----------

  /**
   * What AWS would answer when `principal` (a role of the world, or any ARN with the identity
   * policies given) calls `action` on `resource`, over TLS unless the context says otherwise.
   */
  public async decide(
    principal: RoleView | { arn: string; account: string; identityPolicies: RoleView['identityPolicies'] },
    action: string,
    resource: string,
    context: Record<string, string | string[]> = {},
    /** For a resource outside the templates (a role Organizations created, say): its policy. */
    externalResourcePolicy?: PolicyDocument,
  ): Promise<Decision> {
    const resourcePolicy = externalResourcePolicy ?? this.resourcePolicy(resource, action);
    const owner = resource === '*' ? principal.account : externalResourcePolicy ? resource.split(':')[4] : this.ownerOf(resource);
    const response = await runSimulation(
      {
        identityPolicies: principal.identityPolicies.map((p) => ({ name: p.name, policy: p.policy })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        ...(resourcePolicy ? { resourcePolicy } : {}),
        request: {
          action,
          principal: principal.arn,
          resource: { accountId: owner, resource },
          contextVariables: {
            'aws:PrincipalArn': principal.arn,
            'aws:PrincipalAccount': principal.account,
            'aws:SecureTransport': 'true',
            // Global keys IAM puts in every request context (IAM User Guide, AWS global condition context keys).
            'aws:ResourceAccount': owner,
            ...(this.organization?.accounts.includes(owner) ? { 'aws:ResourceOrgID': this.organization.id } : {}),
            ...(this.organization?.accounts.includes(principal.account) ? { 'aws:PrincipalOrgID': this.organization.id } : {}),
            ...(action.startsWith('s3:') ? { 's3:ResourceAccount': this.ownerOf(resource) } : {}),
            ...context,
          },
        },
      } as Json,
      {},
    );
    if (response.resultType === 'error') throw new Error(`iam-simulate refused ${action} on ${resource}: ${JSON.stringify(response.errors)}`);
    return response.overallResult as Decision;
  }
}

/** A principal with one inline identity policy, for callers that are not in the templates. */
export function outsider(arn: string, statements: Json[]): { arn: string; account: string; identityPolicies: RoleView['identityPolicies'] } {
  return { arn, account: arn.split(':')[4], identityPolicies: [{ name: 'outsider', policy: { Version: '2012-10-17', Statement: statements } }] };
}
