import { MappingDocument, sizeProblem, validateMapping } from '../../domain/mapping';
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
  const problems = validateMapping(doc, { bucketCount: options.bucketCount });
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
    const existing = await store.readVersion(doc.version);
    if (existing) {
      if (existing.text !== text) {
        throw new PublishRefusedError(
          `version ${doc.version} is already published${where(store)} with different content; publish version ${newest + 1} instead`,
        );
      }
    } else if (doc.version <= newest) {
      throw new PublishRefusedError(
        `version ${doc.version} is not greater than the newest published version ${newest}${where(store)}; publish version ${newest + 1} instead`,
      );
    }
    versionPresent.set(store, existing !== undefined);
  }

  for (const store of all) {
    if (!versionPresent.get(store)) await store.put(versionKey(doc.version), text);
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

/**
 * Puts the previous mapping back on every group. Routers never accept an older version, so the
 * previous document's content is published as a new version (newest + 1).
 */
export async function rollbackMapping(
  stores: MappingStore | readonly MappingStore[],
  options: PublishOptions & { now: string },
): Promise<PublishResult & { restoredFrom: number }> {
  const store = Array.isArray(stores) ? (stores as readonly MappingStore[])[0] : (stores as MappingStore);
  const first = await store.readGroup(options.groups[0]);
  if (!first) throw new PublishRefusedError(`group \`${options.groups[0]}\` has no mapping yet; nothing to roll back`);
  const versions = await store.versions();
  const previous = versions.filter((v) => v < first.document.version).pop();
  if (previous === undefined)
    throw new PublishRefusedError(`version ${first.document.version} is the first published version; nothing to roll back to`);
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
