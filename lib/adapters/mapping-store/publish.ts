import { MappingDocument, parseMapping, sizeProblem, validateMapping } from '../../domain/mapping';
import { groupKey, MappingStore, StoredMapping, versionKey } from './store';

/** Publishing refused before anything was written (or, for a resume, before anything more was). */
export class PublishRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PublishRefusedError';
  }
}

export interface PublishOptions {
  /** Router groups in rollout order; the first gets the document first. */
  readonly groups: readonly string[];
  /** Publish to this group only. */
  readonly onlyGroup?: string;
  /** Seconds to wait after the first group before the rest. */
  readonly bakeSeconds: number;
  /** Waits; injectable so tests and dry runs need not sleep. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Progress lines for the operator. */
  readonly progress?: (line: string) => void;
  /** Backend slots every router has (`router.slots`): a change may not need more. */
  readonly routerSlots?: number;
  /** The fleet's bucket count (what the routers hash keys into): a document with another is refused. */
  readonly bucketCount?: number;
  /**
   * Reasons to refuse going from the document in force (the first group's, in the first store) to
   * this one: the change commands' guard (moved share, an emptied cell, keys re-routed without their
   * data), applied to a hand-edited document too. Nothing is written when it gives any.
   * @default - no guard (the move engine, which publishes the steps of a planned move)
   */
  readonly guard?: (inForce: MappingDocument, doc: MappingDocument) => readonly string[];
}

export interface GroupResult {
  readonly group: string;
  readonly previousVersion?: number;
  readonly status: 'published' | 'already-current';
}

export interface PublishResult {
  readonly version: number;
  readonly versionObject: 'written' | 'already-present';
  readonly groups: readonly GroupResult[];
}

const BAKE_PROGRESS_SECONDS = 30;

/**
 * How far past the newest published version a new one may be: each change command adds one, and an
 * operator may publish a few changes at once; a larger gap is a hand-edited number.
 */
export const MAX_VERSION_STEP = 1000;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A document as published: what `publish` writes and the router stacks seed, byte for byte. */
export function serializeMapping(doc: MappingDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/**
 * Publishes `doc` to one store or to every region's store: writes the immutable
 * `mappings/v<version>.json` in each, then each group's pointer in order (in every store before the
 * next group), baking after the first group. Re-running after an interruption resumes: an identical
 * version object is accepted and pointers already at this version are skipped. A version not greater
 * than a group's current one in any store, or a concurrent write by someone else, stops the publish
 * with an error; every store is checked before anything is written.
 */
export async function publishMapping(
  stores: MappingStore | readonly MappingStore[],
  doc: MappingDocument,
  options: PublishOptions,
): Promise<PublishResult> {
  const all = Array.isArray(stores) ? (stores as readonly MappingStore[]) : [stores as MappingStore];
  if (all.length === 0) throw new PublishRefusedError('no mapping bucket to publish to');
  const text = serializeMapping(doc);
  const problems = validateMapping(doc, { bucketCount: options.bucketCount, bytes: Buffer.byteLength(text) });
  const tooLarge = sizeProblem(Buffer.byteLength(text));
  if (tooLarge) problems.unshift(tooLarge);
  if (problems.length > 0) throw new PublishRefusedError(`the document is invalid, nothing written: ${problems[0].path}: ${problems[0].message}`);
  const targets = options.onlyGroup === undefined ? options.groups : options.groups.filter((g) => g === options.onlyGroup);
  if (targets.length === 0) throw new PublishRefusedError(`no router group \`${options.onlyGroup}\`; groups are ${options.groups.join(', ')}`);
  const where = (store: MappingStore) => (all.length > 1 ? ` in s3://${store.bucket}` : '');

  // Read every target pointer and version object first: refuse before writing anything anywhere.
  options.progress?.(`checking ${targets.length} router group(s)${all.length > 1 ? ` in ${all.length} buckets` : ''} before writing anything`);
  const current = new Map<MappingStore, Map<string, StoredMapping | undefined>>();
  const versionPresent = new Map<MappingStore, boolean>();
  const newestOf = new Map<MappingStore, number>();
  for (const store of all) {
    const pointers = new Map<string, StoredMapping | undefined>();
    for (const group of targets) {
      const stored = await store.readGroup(group);
      if (stored && stored.document.version > doc.version) {
        throw new PublishRefusedError(
          `group \`${group}\`${where(store)} is at version ${stored.document.version}; version ${doc.version} is older. Make the change on top of the current document`,
        );
      }
      const needed = new Set([...Object.keys(doc.cells), ...Object.keys(stored?.document.cells ?? {})]).size;
      if (options.routerSlots !== undefined && needed > options.routerSlots) {
        throw new PublishRefusedError(
          `group \`${group}\`${where(store)}: going to version ${doc.version} needs ${needed} backend slots at once (the cells of the current and the new document; a removed cell keeps its slot until routes have moved away), and routers have ${options.routerSlots} (router.slots). Remove cells in one version and add them in the next, or raise router.slots and deploy the routers first`,
        );
      }
      pointers.set(group, stored);
    }
    current.set(store, pointers);
    const newest = Math.max(0, ...(await store.versions()));
    newestOf.set(store, newest);
    const existing = await store.readVersion(doc.version);
    if (existing) {
      if (existing.text !== text) {
        // Not "publish the next version instead": a document numbered again on top of someone
        // else's would undo their change.
        throw new PublishRefusedError(
          `version ${doc.version} is already published${where(store)} with different content: someone published since this document was made; make the change again on the document in force (cellctl mapping pull --out FILE), which numbers it ${newest + 1}`,
        );
      }
    } else if (doc.version <= newest) {
      throw new PublishRefusedError(
        `version ${doc.version} is not greater than the newest published version ${newest}${where(store)}: someone published since this document was made; make the change again on the document in force (cellctl mapping pull --out FILE)`,
      );
    }
    versionPresent.set(store, existing !== undefined);
  }
  // A new version (no store has it yet) follows the newest one closely: each change command adds
  // one, and a few changes may go out in one publish, but no document jumps ahead (to 2^52,
  // freezing every later version).
  const newestAll = Math.max(...newestOf.values());
  if (![...versionPresent.values()].some(Boolean)) {
    if (newestAll === 0 && doc.version !== 1)
      throw new PublishRefusedError(
        `version ${doc.version} into an empty bucket: the first published version is 1 (cellctl mapping init makes it; the router stacks seed it)`,
      );
    if (doc.version > newestAll + MAX_VERSION_STEP)
      throw new PublishRefusedError(
        `version ${doc.version} is more than ${MAX_VERSION_STEP} past the newest published version ${newestAll}: each change adds one to the version it was made from; make the change on the document in force (cellctl mapping pull --out FILE)`,
      );
  }
  const inForce = current.get(all[0])!.get(targets[0]);
  if (options.guard && inForce && inForce.document.version !== doc.version) {
    const refusals = options.guard(inForce.document, doc);
    if (refusals.length > 0)
      throw new PublishRefusedError(
        `going from version ${inForce.document.version} (in force in group \`${targets[0]}\`) to ${doc.version} is refused; nothing written:\n${refusals.map((r) => `  - ${r}`).join('\n')}`,
      );
  }

  // Each version object records the version in force before it (in the first group, where a publish
  // starts): what a rollback restores, never a version that was written and never in force.
  const previousInForce = inForce && inForce.document.version < doc.version ? inForce.document.version : undefined;
  for (const store of all) {
    if (!versionPresent.get(store))
      await store.put(
        versionKey(doc.version),
        text,
        undefined,
        previousInForce !== undefined ? { [PREVIOUS_IN_FORCE]: String(previousInForce) } : undefined,
      );
    options.progress?.(`${versionPresent.get(store) ? 'found' : 'wrote'} ${versionKey(doc.version)}${where(store)}`);
  }
  const versionObject: PublishResult['versionObject'] = all.every((store) => versionPresent.get(store)) ? 'already-present' : 'written';

  const sleep = options.sleep ?? defaultSleep;
  const results: GroupResult[] = [];
  for (const [i, group] of targets.entries()) {
    const step = targets.length > 1 ? ` (${i + 1}/${targets.length})` : '';
    let previousVersion: number | undefined;
    let published = false;
    for (const store of all) {
      const stored = current.get(store)!.get(group);
      previousVersion ??= stored?.document.version;
      if (stored?.document.version === doc.version) {
        options.progress?.(`group ${group}${step}${where(store)}: already at v${doc.version}`);
        continue;
      }
      await store.put(groupKey(group), text, stored?.etag);
      published = true;
      options.progress?.(`group ${group}${step}${where(store)}: v${stored?.document.version ?? '-'} -> v${doc.version}`);
    }
    results.push({ group, previousVersion, status: published ? 'published' : 'already-current' });
    const isFirstOfMany = i === 0 && targets.length > 1 && options.onlyGroup === undefined;
    if (published && isFirstOfMany && options.bakeSeconds > 0) {
      options.progress?.(`baking ${options.bakeSeconds}s on group ${group} before the other groups`);
      // A line every half minute, so a long bake shows it is still under way (and how long is left).
      for (let left = options.bakeSeconds; left > 0; left -= BAKE_PROGRESS_SECONDS) {
        if (left < options.bakeSeconds) options.progress?.(`baking on group ${group}: ${left}s left`);
        await sleep(Math.min(left, BAKE_PROGRESS_SECONDS) * 1000);
      }
    }
  }
  return { version: doc.version, versionObject, groups: results };
}

/** The version object's metadata key naming the version in force before it was published. */
export const PREVIOUS_IN_FORCE = 'previous-in-force';

/**
 * Puts the previous mapping back on every group: the version that was in force before the current
 * one (recorded on the current version's object when it was published), never a version object
 * that was written and never in force (an interrupted or refused publish). An object from before
 * that record existed falls back to the newest version below it, and says so. Routers never accept
 * an older version, so the previous document's content is published as a new version (newest + 1).
 */
export async function rollbackMapping(
  stores: MappingStore | readonly MappingStore[],
  options: PublishOptions & { now: string },
): Promise<PublishResult & { restoredFrom: number }> {
  const store = Array.isArray(stores) ? (stores as readonly MappingStore[])[0] : (stores as MappingStore);
  const first = await store.readGroup(options.groups[0]);
  if (!first) throw new PublishRefusedError(`group \`${options.groups[0]}\` has no mapping yet; nothing to roll back`);
  const versions = await store.versions();
  const current = first.document.version;
  const recorded = (await store.versionMetadata(current))?.[PREVIOUS_IN_FORCE];
  let previous: number | undefined;
  if (recorded !== undefined && /^\d+$/.test(recorded) && Number(recorded) < current) {
    previous = Number(recorded);
  } else {
    previous = versions.filter((v) => v < current).pop();
    if (previous !== undefined)
      options.progress?.(
        `v${current} carries no record of the version in force before it (published before that was recorded): restoring the newest version below it, v${previous}`,
      );
  }
  if (previous === undefined) throw new PublishRefusedError(`version ${current} is the first published version; nothing to roll back to`);
  const source = await store.readVersion(previous);
  if (!source) throw new PublishRefusedError(`mappings/v${previous}.json disappeared while reading it; retry`);
  const version = Math.max(...versions) + 1;
  const doc: MappingDocument = { ...source.document, version, createdAt: options.now };
  options.progress?.(`restoring the content of v${previous} as v${version}`);
  return { ...(await publishMapping(stores, doc, options)), restoredFrom: previous };
}

export interface HistoryEntry {
  readonly version: number;
  readonly createdAt?: string;
  /** Router groups whose pointer is at this version. */
  readonly groups: readonly string[];
}

/** Published versions, newest first (at most `limit`), with the groups pointing at each. */
export async function mappingHistory(store: MappingStore, groups: readonly string[], limit = 20): Promise<HistoryEntry[]> {
  const pointers = new Map<string, number>();
  for (const group of groups) {
    const stored = await store.readGroup(group);
    if (stored) pointers.set(group, stored.document.version);
  }
  const versions = (await store.versions()).reverse().slice(0, limit);
  const entries: HistoryEntry[] = [];
  for (const version of versions) {
    const stored = await store.readVersion(version);
    entries.push({
      version,
      createdAt: stored?.document.createdAt,
      groups: groups.filter((g) => pointers.get(g) === version),
    });
  }
  return entries;
}

export interface RepairResult {
  readonly bucket: string;
  readonly group: string;
  /** `valid`: nothing to repair; `repaired`: the pointer now holds `version`'s document. */
  readonly status: 'valid' | 'repaired' | 'missing';
  readonly version?: number;
}

/**
 * Puts every invalid group pointer back on a valid published version: `version` when given, else
 * the newest valid version object of its bucket. The routers kept their last-known-good mapping
 * while the pointer was invalid and accept only a newer version, so a version at or below theirs
 * changes nothing they serve; the next publish goes on from the newest version. The write replaces
 * exactly the invalid object read (If-Match): a concurrent repair or publish is refused, not
 * overwritten. Valid pointers are left alone.
 */
export async function repairPointers(
  stores: readonly MappingStore[],
  groups: readonly string[],
  options: { readonly version?: number; readonly progress?: (line: string) => void } = {},
): Promise<RepairResult[]> {
  const results: RepairResult[] = [];
  for (const store of stores) {
    let source: StoredMapping | undefined;
    for (const group of groups) {
      const raw = await store.readRaw(groupKey(group));
      if (!raw) {
        results.push({ bucket: store.bucket, group, status: 'missing' });
        continue;
      }
      const parsed = parseMapping(raw.text);
      if (parsed.ok) {
        results.push({ bucket: store.bucket, group, status: 'valid', version: parsed.document.version });
        continue;
      }
      source ??= await repairSource(store, options.version);
      await store.put(groupKey(group), source.text, raw.etag);
      options.progress?.(
        `group ${group} in s3://${store.bucket}: invalid (${parsed.problems[0].path}: ${parsed.problems[0].message}) -> v${source.document.version}`,
      );
      results.push({ bucket: store.bucket, group, status: 'repaired', version: source.document.version });
    }
  }
  return results;
}

async function repairSource(store: MappingStore, version: number | undefined): Promise<StoredMapping> {
  if (version !== undefined) {
    const stored = await store.readVersion(version);
    if (!stored)
      throw new PublishRefusedError(`no version ${version} in s3://${store.bucket}; \`cellctl mapping history\` lists the published versions`);
    return stored;
  }
  for (const v of (await store.versions()).reverse()) {
    try {
      const stored = await store.readVersion(v);
      if (stored) return stored;
    } catch {
      // An invalid version object: try the one before it.
    }
  }
  throw new PublishRefusedError(
    `s3://${store.bucket} holds no valid published version to point the group at; publish one with \`cellctl mapping publish\``,
  );
}
