import * as path from 'path';
import { CfnElement, Stack, Stage, Validations } from 'aws-cdk-lib';
import { NagPack } from 'cdk-nag';
import { IConstruct } from 'constructs';
import { CONTROL_TOWER, ControlTowerChecks } from './control-tower';

/** Where and why a finding was acknowledged. */
export interface Acknowledgement {
  readonly reason: string;
  /** Construct path the acknowledgment sits on (the resource itself or an ancestor). */
  readonly at: string;
}

/** One finding of one rule on one resource, open or acknowledged. */
export interface Finding {
  readonly pack: string;
  /** Deployed stack name (`orders-cell-eu-1`). */
  readonly stack: string;
  /** Rule id as acknowledged: `AwsSolutions-IAM5[Action::s3:*]`, `CellIsolation-CI1[cell:eu-2]`, `CT.S3.PR.1`. */
  readonly rule: string;
  /** Construct path of the resource. */
  readonly resource: string;
  readonly description: string;
  readonly acknowledgement?: Acknowledgement;
}

/**
 * The acknowledgment of `ruleId` on `node` or its nearest ancestor that has one, as CDK and cdk-nag
 * look it up. `ids` are the metadata keys that count (cdk-nag ids are stored as `Annotation::<id>`).
 */
export function acknowledgementOf(node: IConstruct, ids: readonly string[]): Acknowledgement | undefined {
  for (let current: IConstruct | undefined = node; current; current = current.node.scope) {
    for (const entry of current.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY || !entry.data) continue;
      for (const [key, reason] of Object.entries(entry.data as Record<string, string>)) {
        if (ids.includes(key) || ids.includes(key.replace(/^annotation::/i, ''))) return { reason, at: current.node.path };
      }
    }
  }
  return undefined;
}

/** A stack's deployed name; a nested stack's as `<parent>/<id>` (its own name is a token). */
export function stackLabel(stack: Stack): string {
  return stack.nestedStackParent ? `${stackLabel(stack.nestedStackParent)}/${stack.node.id}` : stack.stackName;
}

/** Every stack under `root`, stages included, in construct order. */
export function allStacks(root: IConstruct): Stack[] {
  return root.node.findAll().filter((c): c is Stack => Stack.isStack(c));
}

/**
 * Runs a cdk-nag pack over `root` and returns its open and acknowledged findings. cdk-nag 3
 * reports only open ones, and checks an acknowledgment only for a non-compliant resource, so the
 * acknowledged ones are collected by observing that check (and the rule it was made for).
 */
export function nagFindings(pack: NagPack, root: IConstruct): Finding[] {
  const hooked = pack as unknown as {
    applyRule: (params: { info: string; node: IConstruct }) => void;
    isAcknowledged: (node: IConstruct, ruleId: string) => boolean;
  };
  if (typeof hooked.applyRule !== 'function' || typeof hooked.isAcknowledged !== 'function') {
    throw new Error('nagFindings: this cdk-nag version has no applyRule/isAcknowledged to observe; pin cdk-nag 3.0.x');
  }
  const applyRule = hooked.applyRule.bind(pack);
  const isAcknowledged = hooked.isAcknowledged.bind(pack);
  const findings: Finding[] = [];
  let info = '';
  hooked.applyRule = (params) => {
    info = params.info;
    applyRule(params);
  };
  hooked.isAcknowledged = (node, ruleId) => {
    const hit = isAcknowledged(node, ruleId);
    if (hit) {
      findings.push({
        pack: pack.readPackName,
        stack: stackLabel(Stack.of(node)),
        rule: ruleId,
        resource: node.node.path,
        description: info,
        acknowledgement: acknowledgementOf(node, [ruleId]),
      });
    }
    return hit;
  };
  const byPath = new Map(root.node.findAll().map((c) => [c.node.path, c]));
  for (const violation of pack.validateScope(root).violations) {
    for (const resource of violation.violatingResources) {
      const node = byPath.get(resource.constructPath ?? '');
      findings.push({
        pack: pack.readPackName,
        stack: node ? stackLabel(Stack.of(node)) : '?',
        rule: violation.ruleName,
        resource: resource.constructPath ?? '?',
        description: violation.description,
      });
    }
  }
  return findings;
}

/**
 * Runs the Control Tower proactive controls over the synthesized template of every stack under
 * `root` (call after `app.synth()`), and matches each finding to its construct and acknowledgment
 * (`ControlTower::<control>` on the resource or an ancestor, as CDK's own report does).
 */
export function controlTowerFindings(root: IConstruct, checks = new ControlTowerChecks()): Finding[] {
  const findings: Finding[] = [];
  for (const stack of allStacks(root)) {
    const stage = Stage.of(stack);
    if (!stage?.outdir) throw new Error(`controlTowerFindings: ${stack.node.path} has no synthesized template; call app.synth() first`);
    const byLogicalId = new Map<string, IConstruct>(
      stack.node
        .findAll()
        .filter((c): c is CfnElement => CfnElement.isCfnElement(c) && Stack.of(c) === stack)
        .map((c) => [stack.resolve(c.logicalId) as string, c]),
    );
    for (const violation of checks.checkTemplate(path.join(stage.outdir, stack.templateFile))) {
      for (const resource of violation.violatingResources) {
        const node = byLogicalId.get(resource.resourceLogicalId ?? '');
        findings.push({
          pack: CONTROL_TOWER,
          stack: stackLabel(stack),
          rule: violation.ruleName,
          resource: node?.node.path ?? `${stack.node.path}/${resource.resourceLogicalId}`,
          description: violation.description,
          acknowledgement: node ? acknowledgementOf(node, [`${CONTROL_TOWER}::${violation.ruleName}`]) : undefined,
        });
      }
    }
  }
  return findings;
}
