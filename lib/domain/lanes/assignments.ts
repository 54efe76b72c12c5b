import { isValidKey, keyProblem } from '../mapping/key';
import { defaultShardIndex, LaneSettings, overlap, Shard, shardId, shardSetProblems } from './shards';

/**
 * Tenants an operator placed on a shard other than their default one (`cellctl lanes assign`):
 * stored as one document in the home region's mapping bucket (`lanes/assignments.json`) and
 * replaced only with If-Match on the ETag read, so two assignments made at once cannot both pass
 * the overlap check against a document that no longer holds.
 */
export interface LaneAssignment {
  readonly lanes: Shard;
  /** Only this tenant may use the shard: no default shard and no other assignment is it. */
  readonly dedicated?: boolean;
  /** When it was assigned (ISO 8601). */
  readonly at: string;
}

export interface AssignmentsDocument {
  readonly schemaVersion: 1;
  readonly assignments: Readonly<Record<string, LaneAssignment>>;
}

export const EMPTY_ASSIGNMENTS: AssignmentsDocument = { schemaVersion: 1, assignments: {} };

/** Where the assignments live in the home region's mapping bucket. */
export const ASSIGNMENTS_KEY = 'lanes/assignments.json';

/** Parses and checks a stored assignments document; throws naming every problem. */
export function parseAssignments(text: string, settings: LaneSettings, shards: readonly Shard[]): AssignmentsDocument {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${ASSIGNMENTS_KEY} is not JSON (${(error as Error).message}); restore an earlier version of the object`);
  }
  const doc = parsed as Partial<AssignmentsDocument> | null;
  if (typeof doc !== 'object' || doc === null || doc.schemaVersion !== 1 || typeof doc.assignments !== 'object' || doc.assignments === null)
    throw new Error(`${ASSIGNMENTS_KEY}: expected {"schemaVersion": 1, "assignments": {"<tenant>": {"lanes": [1, 2], "at": "…"}}}`);
  const problems: string[] = [];
  const entries = Object.entries(doc.assignments as Record<string, LaneAssignment>);
  for (const [tenant, a] of entries) {
    if (!isValidKey(tenant)) problems.push(`assignments.${tenant}: ${keyProblem(tenant)}`);
    if (typeof a !== 'object' || a === null || !Array.isArray(a.lanes)) problems.push(`assignments.${tenant} must be {"lanes": [..], "at": "…"}`);
  }
  if (problems.length === 0) problems.push(...inUseProblems(settings, shards, doc as AssignmentsDocument));
  if (problems.length > 0) throw new Error(`${ASSIGNMENTS_KEY} is invalid:\n  - ${problems.join('\n  - ')}`);
  return doc as AssignmentsDocument;
}

/** The shards in use: the default set, then every assigned shard not in it (each once). */
export function shardsInUse(shards: readonly Shard[], doc: AssignmentsDocument, except?: string): Shard[] {
  const ids = new Set(shards.map(shardId));
  const inUse = [...shards];
  for (const [tenant, a] of Object.entries(doc.assignments)) {
    if (tenant === except || ids.has(shardId(a.lanes))) continue;
    ids.add(shardId(a.lanes));
    inUse.push(a.lanes);
  }
  return inUse;
}

function inUseProblems(settings: LaneSettings, shards: readonly Shard[], doc: AssignmentsDocument): string[] {
  const problems = shardSetProblems(settings, shardsInUse(shards, doc), 'shards in use');
  const defaults = new Set(shards.map(shardId));
  const users = new Map<string, string[]>();
  for (const [tenant, a] of Object.entries(doc.assignments)) users.set(shardId(a.lanes), [...(users.get(shardId(a.lanes)) ?? []), tenant]);
  for (const [tenant, a] of Object.entries(doc.assignments)) {
    if (!a.dedicated) continue;
    const id = shardId(a.lanes);
    if (defaults.has(id)) problems.push(`assignments.${tenant}: dedicated shard ${id} is a default shard`);
    if ((users.get(id) ?? []).length > 1)
      problems.push(
        `assignments.${tenant}: dedicated shard ${id} is also assigned to ${users
          .get(id)!
          .filter((t) => t !== tenant)
          .join(', ')}`,
      );
  }
  return problems;
}

/** A tenant's shard and where it comes from. */
export interface TenantShard {
  readonly tenant: string;
  readonly lanes: Shard;
  readonly source: 'default' | 'assigned' | 'dedicated';
}

export function tenantShard(tenant: string, shards: readonly Shard[], doc: AssignmentsDocument = EMPTY_ASSIGNMENTS): TenantShard {
  const a = doc.assignments[tenant];
  if (a) return { tenant, lanes: a.lanes, source: a.dedicated ? 'dedicated' : 'assigned' };
  if (shards.length === 0) throw new Error('the shard set is empty; run `cellctl lanes init`');
  return { tenant, lanes: shards[defaultShardIndex(tenant, shards)], source: 'default' };
}

/**
 * The document with `tenant` on `lanes`, or an error saying why the bound would break and what
 * would fit. `lanes: undefined` removes the assignment (back to the default shard).
 */
export function assign(
  settings: LaneSettings,
  shards: readonly Shard[],
  doc: AssignmentsDocument,
  tenant: string,
  lanes: Shard | undefined,
  { dedicated = false, now = new Date() }: { dedicated?: boolean; now?: Date } = {},
): AssignmentsDocument {
  const problem = keyProblem(tenant);
  if (problem) throw new Error(`tenant \`${tenant}\`: ${problem}`);
  const rest = Object.fromEntries(Object.entries(doc.assignments).filter(([t]) => t !== tenant));
  if (lanes === undefined) return { schemaVersion: 1, assignments: rest };
  const sorted = [...lanes].sort((a, b) => a - b);
  const id = shardId(sorted);
  const shape = shardSetProblems(settings, [sorted], 'shard');
  if (shape.length > 0) throw new Error(`shard ${id}: ${shape.join('; ')}`);
  const others: AssignmentsDocument = { schemaVersion: 1, assignments: rest };
  const inUse = shardsInUse(shards, others);
  const same = inUse.find((s) => shardId(s) === id);
  const dedicatedTo = Object.entries(rest).find(([, a]) => a.dedicated && shardId(a.lanes) === id)?.[0];
  if (dedicatedTo)
    throw new Error(`shard ${id} is dedicated to tenant \`${dedicatedTo}\`; choose other lanes (\`cellctl lanes plan\` lists the shards in use)`);
  if (same && dedicated) {
    const sharedWith = shards.some((s) => shardId(s) === id)
      ? 'a default shard other tenants hash to'
      : `assigned to ${Object.entries(rest)
          .filter(([, a]) => shardId(a.lanes) === id)
          .map(([t]) => `\`${t}\``)
          .join(', ')}`;
    throw new Error(`shard ${id} cannot be dedicated to \`${tenant}\`: it is ${sharedWith}; choose lanes no shard in use has`);
  }
  if (!same) {
    const clash = inUse.find((s) => overlap(s, sorted) > settings.maxOverlap);
    if (clash)
      throw new Error(
        `shard ${id} shares ${overlap(clash, sorted)} lanes with shard ${shardId(clash)} in use; router.lanes.maxOverlap is ${settings.maxOverlap}. ` +
          `Pick a shard in use (\`cellctl lanes plan\`) or lanes that overlap each shard in use by at most ${settings.maxOverlap}`,
      );
  }
  const entry: LaneAssignment = { lanes: sorted, ...(dedicated ? { dedicated: true } : {}), at: now.toISOString() };
  return { schemaVersion: 1, assignments: { ...rest, [tenant]: entry } };
}

/** `1-4` or `1,4` → [1, 4]; an error names the text. */
export function parseShard(text: string): Shard {
  const parts = text.split(/[-,]/).map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => !/^[0-9]+$/.test(p)))
    throw new Error(`shard \`${text}\` must be lane numbers joined by - or , (for example 1-4)`);
  return parts.map(Number).sort((a, b) => a - b);
}
