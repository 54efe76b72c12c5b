import { cidrsOverlap, CidrRange, parseCidr } from '../../domain/fleet/cidr';
import { cellNamePrefix, cellStackName } from '../../domain/names';

/**
 * What the isolation rules know about the fleet: who owns which account, name and address range.
 * Plain data, so every rule is a pure function of (resource, stack, fleet facts).
 */
export interface FleetFacts {
  readonly app: string;
  /** `cidr` is undefined for cell zero: the factory does not own its network. */
  readonly cells: readonly { readonly id: string; readonly account: string; readonly cidr?: string }[];
  readonly routerAccount: string;
  readonly toolingAccount: string;
}

/** One resource as it is written to the template (`Ref`/`Fn::*` left as they are). */
export interface ResourceView {
  readonly logicalId: string;
  readonly type: string;
  readonly properties: Record<string, unknown>;
  readonly updatePolicy?: Record<string, unknown>;
  /** Tags as CDK will render them; undefined when the resource type takes no tags. */
  readonly tags?: Readonly<Record<string, string>>;
}

/** Which part of the fleet a stack belongs to, from the account it deploys into. */
export type StackRole =
  { readonly kind: 'cell'; readonly cellId: string } | { readonly kind: 'router' } | { readonly kind: 'pipeline' } | { readonly kind: 'other' };

export interface StackView {
  readonly role: StackRole;
  readonly account: string;
  /** Every resource of the stack by logical id. */
  readonly resources: ReadonlyMap<string, ResourceView>;
}

/**
 * The role of a stack deployed into `account`. A stack in a cell's account is part of that cell,
 * whoever wrote it: a user's own stacks and constructs in a cell are checked like the factory's.
 */
export function stackRole(facts: FleetFacts, account: string): StackRole {
  const cell = facts.cells.find((c) => c.account === account);
  if (cell) return { kind: 'cell', cellId: cell.id };
  if (account === facts.routerAccount) return { kind: 'router' };
  if (account === facts.toolingAccount) return { kind: 'pipeline' };
  return { kind: 'other' };
}

/**
 * Cells named in `text`: `<app>-<cell>` (alarm, topic, role, log group and dashboard names) or
 * `<app>-cell-<cell>` (stack names) where the id is not followed by more of an id. When ids are
 * prefixes of each other (`eu-1`, `eu-1-b`), the longest one that matches is the owner.
 */
export function cellsNamedIn(facts: FleetFacts, text: string): string[] {
  const found = new Set<string>();
  const ids = [...facts.cells.map((c) => c.id)].sort((a, b) => b.length - a.length);
  for (const prefix of [cellStackName(facts.app, ''), cellNamePrefix(facts.app, '')]) {
    let at = text.indexOf(prefix);
    while (at >= 0) {
      const rest = text.slice(at + prefix.length);
      const id = ids.find((candidate) => rest.startsWith(candidate) && !/^[A-Za-z0-9]/.test(rest.slice(candidate.length)));
      if (id) found.add(id);
      at = text.indexOf(prefix, at + 1);
    }
  }
  return [...found];
}

/** The cell whose name an alarm carries (`<app>-<cell>-...`), if any. */
export function alarmOwner(facts: FleetFacts, alarmName: string): string | undefined {
  const ids = [...facts.cells.map((c) => c.id)].sort((a, b) => b.length - a.length);
  return ids.find((id) => alarmName.startsWith(`${cellNamePrefix(facts.app, id)}-`));
}

/** Every string inside a template value, with the JSON path it sits at (inside `Fn::Join` too). */
export function stringsIn(value: unknown, path = ''): { path: string; value: string }[] {
  if (typeof value === 'string') return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsIn(v, `${path}/${i}`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringsIn(v, `${path}/${k}`));
  return [];
}

/** Whether `key` appears as an object key anywhere in `value` (e.g. `Fn::ImportValue`). */
export function hasKey(value: unknown, key: string): boolean {
  if (Array.isArray(value)) return value.some((v) => hasKey(v, key));
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => k === key || hasKey(v, key));
  return false;
}

/**
 * Cells other than `self` whose address range overlaps `cidr`. A default route (`/0`, egress to
 * the internet through NAT) names no cell: the cell VPC has no route to another cell's range.
 */
export function cellsOverlapping(facts: FleetFacts, self: string, cidr: string): string[] {
  const range = rangeOf(cidr);
  if (!range || range.prefix === 0) return [];
  return facts.cells
    .filter((c) => c.id !== self)
    .filter((c) => {
      const other = c.cidr === undefined ? undefined : parseCidr(c.cidr);
      return other !== undefined && cidrsOverlap(range, other);
    })
    .map((c) => c.id);
}

/** A CIDR as a range, host bits ignored (security group rules may name a single address). */
function rangeOf(cidr: string): CidrRange | undefined {
  const match = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(cidr);
  if (!match) return undefined;
  const prefix = Number(match[2]);
  const address = match[1]
    .split('.')
    .map(Number)
    .reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  return parseCidr(`${toDotted(address - (address % size))}/${prefix}`);
}

function toDotted(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}
