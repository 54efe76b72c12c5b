import { CfnResource, ITaggable, Stack, TagManager } from 'aws-cdk-lib';
import { NagMessageLevel, NagPack, NagPackProps, NagRuleCompliance } from 'cdk-nag';
import { IConstruct } from 'constructs';
import { Fleet } from '../../domain/fleet';
import { routerRoutingOf, routerTaskConfig } from '../../runtime/router/task-config';
import { FleetFacts, ResourceView, StackView, stackRole } from './facts';
import { ISOLATION_RULES, RuleContext } from './rules';

export interface CellIsolationChecksProps extends NagPackProps {
  /** Who owns which account, name and address range: the app, its cells, the router and tooling accounts. */
  readonly facts: FleetFacts;
  /**
   * The HAProxy configuration every router task is checked with.
   * @default each router task's own, rendered into its image at synth (`RouterGroup.haproxyConfig`);
   * for a task that has none, `defaultRouterConfig`
   */
  readonly routerConfig?: string;
  /**
   * The configuration a router task runs when it rendered none of its own (`routerImageConfig(fleet)`).
   * @default - none: such a task is reported (`CellIsolation-CI6[no-config]`), as it cannot be checked
   */
  readonly defaultRouterConfig?: string;
}

/**
 * The configuration a router task of `fleet` runs: what the router stacks render into the router
 * image, and what `cellctl router config --config cells.config.ts` prints with its defaults (one
 * renderer and one reading of the fleet for all three, lib/runtime/router/task-config.ts).
 */
export function routerImageConfig(fleet: Fleet): string {
  return routerTaskConfig(routerRoutingOf(fleet));
}

/** The HAProxy configuration a construct above `node` rendered into its router image (`RouterGroup.haproxyConfig`). */
function renderedRouterConfig(node: IConstruct): string | undefined {
  for (const scope of [...node.node.scopes].reverse()) {
    const config = (scope as { haproxyConfig?: unknown }).haproxyConfig;
    if (typeof config === 'string') return config;
  }
  return undefined;
}

/** Tags as a `Key`/`Value` list or a map, as CloudFormation resource types write them. */
function renderedTags(tags: unknown): Record<string, string> | undefined {
  if (Array.isArray(tags)) {
    return Object.fromEntries(tags.filter((t) => typeof t?.Key === 'string').map((t) => [t.Key as string, String(t.Value)]));
  }
  if (tags && typeof tags === 'object') return Object.fromEntries(Object.entries(tags).map(([k, v]) => [k, String(v)]));
  return undefined;
}

/** Every resource of `stack` as it is written to its template (overrides and tags included). */
function stackView(stack: Stack, facts: FleetFacts): StackView {
  const resources = new Map<string, ResourceView>();
  for (const construct of stack.node.findAll()) {
    if (!CfnResource.isCfnResource(construct) || Stack.of(construct) !== stack) continue;
    const rendered = stack.resolve((construct as unknown as { _toCloudFormation(): unknown })._toCloudFormation()) as {
      Resources?: Record<string, { Type: string; Properties?: Record<string, unknown>; UpdatePolicy?: Record<string, unknown> }>;
    };
    // A resource that does not synthesize (an IAM policy left empty once CDK moved its statements to
    // an overflow managed policy) renders to nothing.
    for (const [logicalId, r] of Object.entries(rendered.Resources ?? {})) {
      const properties = r.Properties ?? {};
      const tags = TagManager.isTaggable(construct) ? (construct as unknown as ITaggable).tags.tagValues() : renderedTags(properties.Tags);
      resources.set(logicalId, { logicalId, type: r.Type, properties, updatePolicy: r.UpdatePolicy, tags });
    }
  }
  return { role: stackRole(facts, stack.account), account: stack.account, resources };
}

/**
 * Cell isolation as a cdk-nag 3 pack: the ways a cell boundary exists only on the diagram (shared
 * state, logic or retries in the router, deploying everywhere at once, unbounded cells, cells
 * reaching each other), each a pure rule in `rules.ts`. Register it like AwsSolutionsChecks:
 * `Validations.of(app).addPlugins(new CellIsolationChecks(app, isolationChecksPropsOf(fleet)))`. It walks the whole
 * construct tree, pipeline stages included, so a user's own constructs or stacks in a cell's
 * account are checked like the factory's. Acknowledge with
 * `Validations.of(construct).acknowledge({ id: 'CellIsolation-CI1[cell:eu-2]', reason })`.
 */
export class CellIsolationChecks extends NagPack {
  public readonly name = 'CellIsolation';
  public override readonly ruleIds = ISOLATION_RULES.map((r) => `CellIsolation-${r.id}`);
  private readonly context: RuleContext;
  private readonly routerConfig?: string;
  private views = new Map<Stack, StackView>();

  constructor(scope: IConstruct | undefined, props: CellIsolationChecksProps) {
    super(scope, props);
    this.packName = 'CellIsolation';
    this.routerConfig = props.routerConfig;
    const fallback = props.defaultRouterConfig;
    this.context = { facts: props.facts, routerConfig: () => fallback };
  }

  public override validateScope(scope: IConstruct) {
    this.views = new Map();
    return super.validateScope(scope);
  }

  protected checkResource(node: CfnResource): void {
    const stack = Stack.of(node);
    let view = this.views.get(stack);
    if (!view) this.views.set(stack, (view = stackView(stack, this.context.facts)));
    const resource = view.resources.get(stack.resolve(node.logicalId) as string);
    if (!resource) return;
    const given = this.routerConfig ?? renderedRouterConfig(node);
    const context: RuleContext = given === undefined ? this.context : { ...this.context, routerConfig: () => given };
    for (const rule of ISOLATION_RULES) {
      const stackOf = view;
      this.applyRule({
        ruleSuffixOverride: rule.id,
        info: rule.info,
        explanation: rule.explanation,
        level: NagMessageLevel.ERROR,
        node,
        rule: () => {
          const findings = rule.check(resource, stackOf, context);
          return findings.length === 0 ? NagRuleCompliance.COMPLIANT : findings;
        },
      });
    }
  }
}
