import { bucketCounts, compressBuckets, expandBuckets } from './buckets';
import { keyProblem, PREFIX_PATTERN } from './key';
import { CELL_ID_PATTERN, isValidBucketCount } from './validate';
import { changeEachTable, tableOfRegion } from './homes';
import { HASH_NAME, Homes, HOMES_SCHEMA_VERSION, MappingCellState, MappingDocument, Overrides, SCHEMA_VERSION } from './types';

/** A change that cannot be made; the message says why and what to do instead. */
export class MappingChangeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MappingChangeError';
  }
}

/** When the change is made (the new document's `createdAt`), so changes stay pure. */
export interface ChangeOptions {
  readonly now: string;
}

export interface InitialCell {
  readonly id: string;
  readonly endpoint: string;
  readonly state: MappingCellState;
  readonly canary?: boolean;
  /** Its share of the buckets against the others' (the shape's tested requestsPerSecond). @default 1: an even share */
  readonly weight?: number;
  /**
   * Whether it takes buckets (tenants nobody placed): a cell of another tier than the default, or
   * dedicated to one tenant, does not. @default true
   */
  readonly holdsBuckets?: boolean;
  /** The one tenant it serves: pinned to it by an exact override, and it holds no buckets. @default - none */
  readonly dedicatedTo?: string;
  /** Its region: required with home tables (a table's buckets go to its regions' cells). */
  readonly region?: string;
}

/**
 * `total` split in proportion to `weights` (largest remainder, each part at least 1), in order:
 * the same weights always give the same parts.
 */
export function proportionalParts(total: number, weights: readonly number[]): number[] {
  if (weights.length === 0 || total < weights.length)
    throw new MappingChangeError(`${total} cannot be split into ${weights.length} parts of at least 1`);
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (total * w) / sum);
  const parts = exact.map((x) => Math.max(1, Math.floor(x)));
  let left = total - parts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, rest: x - Math.floor(x) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (let k = 0; left > 0; k = (k + 1) % order.length, left--) parts[order[k].i] += 1;
  for (let k = order.length - 1; left < 0; k = (k - 1 + order.length) % order.length) {
    if (parts[order[k].i] > 1) {
      parts[order[k].i] -= 1;
      left++;
    }
  }
  return parts;
}

/** Prefix the canary cell is given by `initialMapping`: internal tenants test every change first. */
export const CANARY_PREFIX = 'internal-';

function next(doc: MappingDocument, options: ChangeOptions, patch: Partial<MappingDocument>): MappingDocument {
  return { ...doc, ...patch, version: doc.version + 1, createdAt: options.now };
}

function requireCell(doc: MappingDocument, id: string): void {
  if (!doc.cells[id]) {
    throw new MappingChangeError(`cell \`${id}\` is not in the mapping (cells: ${Object.keys(doc.cells).join(', ')})`);
  }
}

/** Cells that currently hold buckets, in document order. */
function holders(doc: MappingDocument): string[] {
  const counts = bucketCounts(doc);
  return Object.keys(doc.cells).filter((id) => (counts.get(id) ?? 0) > 0);
}

/**
 * Version 1 from the fleet: buckets spread by weight, as contiguous ranges, over the active
 * non-canary cells that hold buckets; the canary cell gets the `internal-` prefix override and each
 * dedicated cell its tenant's exact override.
 */
export function initialMapping(cells: readonly InitialCell[], bucketCount: number, options: ChangeOptions, homes?: Homes): MappingDocument {
  if (!isValidBucketCount(bucketCount)) throw new MappingChangeError(`bucketCount ${bucketCount} must be a power of two between 1024 and 1048576`);
  const regular = cells.filter((c) => !c.canary && c.state === 'active' && c.holdsBuckets !== false && c.dedicatedTo === undefined);
  if (regular.length === 0) throw new MappingChangeError('no active non-canary cell of the default tier to hold the buckets');
  // One table, or with home regions one per table: each table's buckets over its own regions' cells.
  const tables = homes?.tables ?? [undefined];
  const buckets = tables.flatMap((table, t) => {
    const holders = table === undefined ? regular : regular.filter((c) => c.region !== undefined && tableOfRegion(homes, c.region) === t);
    const where = table === undefined ? '' : ` of ${table.regions.join(', ')}`;
    if (holders.length === 0)
      throw new MappingChangeError(`no active non-canary cell of the default tier${where} to hold the buckets of its tenants`);
    return spreadByWeight(holders, bucketCount, t * bucketCount);
  });
  const canary = cells.find((c) => c.canary);
  const dedicated = Object.fromEntries(cells.filter((c) => c.dedicatedTo !== undefined && c.state === 'active').map((c) => [c.dedicatedTo!, c.id]));
  return firstDocument(cells, bucketCount, buckets, canary ? { [CANARY_PREFIX]: canary.id } : {}, options, dedicated, homes);
}

/** `bucketCount` buckets from `offset`, as one contiguous range per cell, in proportion to the cells' weights. */
function spreadByWeight(cells: readonly InitialCell[], bucketCount: number, offset: number): MappingDocument['buckets'] {
  if (cells.length > bucketCount) throw new MappingChangeError(`${cells.length} cells but only ${bucketCount} buckets`);
  const weights = cells.map((c) => c.weight ?? 1);
  if (weights.some((w) => !(w > 0) || !Number.isFinite(w))) throw new MappingChangeError('every cell weight must be a positive number');
  // By weight: a cell whose shape was tested at a quarter of another's takes a quarter of its buckets.
  const sizes = proportionalParts(bucketCount, weights);
  let from = offset;
  return cells.map((cell, i) => {
    const range = { from, to: from + sizes[i] - 1, cell: cell.id };
    from += sizes[i];
    return range;
  });
}

/** A version 1 document: the cells listed in order, the given ranges, prefix and exact overrides. */
function firstDocument(
  cells: readonly InitialCell[],
  bucketCount: number,
  buckets: MappingDocument['buckets'],
  prefix: Record<string, string>,
  options: ChangeOptions,
  exact: Record<string, string> = {},
  homes?: Homes,
): MappingDocument {
  return {
    schemaVersion: homes ? HOMES_SCHEMA_VERSION : SCHEMA_VERSION,
    version: 1,
    createdAt: options.now,
    hash: HASH_NAME,
    bucketCount,
    ...(homes ? { homes } : {}),
    cells: Object.fromEntries(cells.map((c) => [c.id, { endpoint: c.endpoint, state: c.state, ...(homes ? { region: c.region } : {}) }])),
    buckets,
    overrides: { exact, prefix },
  };
}

/**
 * Version 1 of a fleet that adopts an existing service: every bucket on `holder` (cell zero), no
 * override, so every key goes where it went before the router stood in front of it. The other cells
 * are listed without buckets: tenants reach them by placement and moves.
 */
export function adoptionMapping(holder: InitialCell, cells: readonly InitialCell[], bucketCount: number, options: ChangeOptions): MappingDocument {
  if (!isValidBucketCount(bucketCount)) throw new MappingChangeError(`bucketCount ${bucketCount} must be a power of two between 1024 and 1048576`);
  if (holder.state !== 'active') throw new MappingChangeError(`cell zero \`${holder.id}\` must be active to hold every bucket`);
  if (cells.some((c) => c.id === holder.id)) throw new MappingChangeError(`cell \`${holder.id}\` is listed twice`);
  return firstDocument([...cells, holder], bucketCount, [{ from: 0, to: bucketCount - 1, cell: holder.id }], {}, options);
}

/**
 * Adds a cell. An `active` cell receives ⌊B/(n+1)⌋ buckets (n = cells holding buckets), or with
 * `weights` for it and every holder (their shapes' tested rates) its weight's share of B, taken one
 * at a time from whichever cell holds the most (for its weight), from the top of its ranges: no
 * bucket moves anywhere except into the new cell. A `quarantine` cell, and one that holds no buckets
 * (`holdsBuckets: false`: another tier's, or dedicated to one tenant), is added without buckets.
 */
export function addCell(
  doc: MappingDocument,
  cell: { id: string; endpoint: string; state?: 'active' | 'quarantine'; holdsBuckets?: boolean; region?: string },
  options: ChangeOptions,
  weights?: ReadonlyMap<string, number>,
): MappingDocument {
  if (doc.cells[cell.id]) throw new MappingChangeError(`cell \`${cell.id}\` is already in the mapping (state ${doc.cells[cell.id].state})`);
  if (!CELL_ID_PATTERN.test(cell.id)) throw new MappingChangeError(`cell id \`${cell.id}\` must match ${CELL_ID_PATTERN.source}`);
  if (doc.homes !== undefined) {
    // Home tables: the cell takes buckets only in its own region's table, from that table's holders.
    const home = cell.region === undefined ? undefined : tableOfRegion(doc.homes, cell.region);
    if (home === undefined)
      throw new MappingChangeError(
        `cell \`${cell.id}\`: ${cell.region === undefined ? 'no region given' : `region ${cell.region} is in no home table of the mapping`}; the mapping's tables are ${doc.homes.tables.map((t) => t.regions.join('+')).join(', ')} (add the cell to the fleet file, or convert the mapping again with its regions)`,
      );
    const added = changeEachTable(doc, (view, t) =>
      addCell(view, { ...cell, region: undefined, holdsBuckets: cell.holdsBuckets !== false && t === home }, options, weights),
    );
    return { ...added, cells: { ...added.cells, [cell.id]: { ...added.cells[cell.id], region: cell.region } } };
  }
  const state = cell.state ?? 'active';
  // One table: no region (a schema-1 document names none).
  const cells = { ...doc.cells, [cell.id]: { endpoint: cell.endpoint, state } };
  if (state === 'quarantine' || cell.holdsBuckets === false) return next(doc, options, { cells });

  const donors = holders(doc);
  const counts = bucketCounts(doc);
  // By weight when every holder and the new cell have one (their shapes' tested rates), else even:
  // the new cell's share of the weights, taken from whichever cell holds the most for its weight.
  const weighted = weights !== undefined && [...donors, cell.id].every((id) => (weights.get(id) ?? 0) > 0);
  const w = (id: string) => (weighted ? weights!.get(id)! : 1);
  const total = donors.reduce((n, id) => n + w(id), 0) + w(cell.id);
  const quota = weighted
    ? Math.min(doc.bucketCount - donors.length, Math.max(1, Math.round((doc.bucketCount * w(cell.id)) / total)))
    : Math.floor(doc.bucketCount / (donors.length + 1));
  const give = new Map(donors.map((id) => [id, 0]));
  for (let taken = 0; taken < quota; taken++) {
    let richest = donors[0];
    for (const id of donors) {
      if ((counts.get(id)! - give.get(id)!) / w(id) > (counts.get(richest)! - give.get(richest)!) / w(richest)) richest = id;
    }
    give.set(richest, give.get(richest)! + 1);
  }
  const expanded = expandBuckets(doc);
  const ids = [...expanded.cells, cell.id];
  const newIndex = ids.length - 1;
  const owner = expanded.owner;
  const remaining = donors.map((id) => give.get(id)!);
  const donorIndex = new Map(donors.map((id, i) => [expanded.cells.indexOf(id), i]));
  for (let b = owner.length - 1; b >= 0; b--) {
    const d = donorIndex.get(owner[b]);
    if (d !== undefined && remaining[d] > 0) {
      owner[b] = newIndex;
      remaining[d] -= 1;
    }
  }
  return next(doc, options, { cells, buckets: compressBuckets({ cells: ids, owner }) });
}

/**
 * Drains a cell: its buckets go to the remaining bucket-holding active cells (when it holds them all,
 * as a cell zero does, to the other active cells no prefix override names), fewest buckets first,
 * in contiguous chunks; nothing else moves. The cell becomes `draining` and keeps its overrides
 * until they are moved too. `canReceive` narrows who may take them (the fleet's default tier, no
 * dedicated cell).
 */
export function drainCell(
  doc: MappingDocument,
  id: string,
  options: ChangeOptions,
  canReceive: (cell: string) => boolean = () => true,
): MappingDocument {
  requireCell(doc, id);
  if (doc.cells[id].state !== 'active') throw new MappingChangeError(`cell \`${id}\` is ${doc.cells[id].state}, not active; nothing to drain`);
  if (doc.homes !== undefined) {
    // Home tables: each table's buckets go to cells of that table's regions, never out of them.
    const homes = doc.homes;
    return changeEachTable(doc, (view, t) => {
      try {
        return drainCell(view, id, options, (c) => canReceive(c) && homes.tables[t].regions.includes(doc.cells[c].region ?? ''));
      } catch (error) {
        if (error instanceof MappingChangeError)
          throw new MappingChangeError(`${error.message} (home table of ${homes.tables[t].regions.join(', ')}: its buckets stay in its regions)`);
        throw error;
      }
    });
  }
  const counts = bucketCounts(doc);
  const holding = holders(doc).filter((c) => c !== id && doc.cells[c].state === 'active' && canReceive(c));
  // A cell zero holds every bucket while the factory's cells hold none: they receive, except one a prefix names (the canary).
  const prefixed = new Set(Object.values(doc.overrides.prefix));
  const receivers =
    holding.length > 0
      ? holding
      : Object.keys(doc.cells).filter((c) => c !== id && doc.cells[c].state === 'active' && !prefixed.has(c) && canReceive(c));
  const cells = { ...doc.cells, [id]: { ...doc.cells[id], state: 'draining' as const } };
  const draining = counts.get(id) ?? 0;
  if (draining === 0) return next(doc, options, { cells });
  if (receivers.length === 0) throw new MappingChangeError(`cell \`${id}\` holds the only buckets; add a cell before draining it`);

  const receive = new Map(receivers.map((c) => [c, 0]));
  for (let given = 0; given < draining; given++) {
    let poorest = receivers[0];
    for (const c of receivers) {
      if ((counts.get(c) ?? 0) + receive.get(c)! < (counts.get(poorest) ?? 0) + receive.get(poorest)!) poorest = c;
    }
    receive.set(poorest, receive.get(poorest)! + 1);
  }
  const expanded = expandBuckets(doc);
  const from = expanded.cells.indexOf(id);
  const queue = receivers.map((c) => ({ index: expanded.cells.indexOf(c), left: receive.get(c)! }));
  let q = 0;
  for (let b = 0; b < expanded.owner.length; b++) {
    if (expanded.owner[b] !== from) continue;
    while (queue[q].left === 0) q += 1;
    expanded.owner[b] = queue[q].index;
    queue[q].left -= 1;
  }
  return next(doc, options, { cells, buckets: compressBuckets(expanded) });
}

/** What still routes to a cell: its buckets and the overrides (exact keys, prefixes) that name it. */
export interface CellRoutes {
  readonly buckets: number;
  readonly exact: readonly string[];
  readonly prefix: readonly string[];
}

export function routesTo(doc: MappingDocument, id: string): CellRoutes {
  return {
    buckets: bucketCounts(doc).get(id) ?? 0,
    exact: Object.keys(doc.overrides.exact).filter((k) => doc.overrides.exact[k] === id),
    prefix: Object.keys(doc.overrides.prefix).filter((p) => doc.overrides.prefix[p] === id),
  };
}

/** `routesTo` in a few words: `12 buckets, pins acme, prefix internal-`, or undefined when nothing routes there. */
export function routesText(routes: CellRoutes): string | undefined {
  const parts = [
    ...(routes.buckets > 0 ? [`${routes.buckets} bucket${routes.buckets === 1 ? '' : 's'}`] : []),
    ...(routes.exact.length > 0
      ? [
          `pin${routes.exact.length === 1 ? '' : 's'} ${routes.exact.slice(0, 5).join(', ')}${routes.exact.length > 5 ? ` and ${routes.exact.length - 5} more` : ''}`,
        ]
      : []),
    ...(routes.prefix.length > 0 ? [`prefix${routes.prefix.length === 1 ? '' : 'es'} ${routes.prefix.join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/**
 * Removes a cell nothing routes to any more (no bucket, no pin, no prefix): the routers drop their
 * backend for it. A cell that still serves is refused, naming what still routes there.
 */
export function removeCell(doc: MappingDocument, id: string, options: ChangeOptions): MappingDocument {
  requireCell(doc, id);
  const still = routesText(routesTo(doc, id));
  if (still) throw new MappingChangeError(`cell \`${id}\` still serves: ${still} route to it; move them to other cells first`);
  const { [id]: _removed, ...cells } = doc.cells;
  if (Object.keys(cells).length === 0) throw new MappingChangeError(`cell \`${id}\` is the mapping's only cell`);
  return next(doc, options, { cells });
}

function withOverrides(doc: MappingDocument, options: ChangeOptions, overrides: Overrides): MappingDocument {
  return next(doc, options, { overrides });
}

function requireTarget(doc: MappingDocument, cell: string, what: string): void {
  requireCell(doc, cell);
  if (doc.cells[cell].state === 'draining') throw new MappingChangeError(`cell \`${cell}\` is draining; ${what} to an active or quarantine cell`);
}

/** Pins one exact key to a cell. */
export function pinKey(doc: MappingDocument, key: string, cell: string, options: ChangeOptions): MappingDocument {
  const problem = keyProblem(key);
  if (problem) throw new MappingChangeError(problem);
  requireTarget(doc, cell, 'pin keys');
  return withOverrides(doc, options, { ...doc.overrides, exact: { ...doc.overrides.exact, [key]: cell } });
}

/** Removes an exact pin; the key goes back to its prefix or bucket. */
export function unpinKey(doc: MappingDocument, key: string, options: ChangeOptions): MappingDocument {
  if (!(key in doc.overrides.exact)) throw new MappingChangeError(`key \`${key}\` is not pinned`);
  const { [key]: _removed, ...exact } = doc.overrides.exact;
  return withOverrides(doc, options, { ...doc.overrides, exact });
}

/** Sends every key starting with `prefix` to a cell (the longest matching prefix wins). */
export function setPrefix(doc: MappingDocument, prefix: string, cell: string, options: ChangeOptions): MappingDocument {
  if (!PREFIX_PATTERN.test(prefix)) throw new MappingChangeError(`prefix \`${prefix}\` must match ${PREFIX_PATTERN.source}`);
  requireTarget(doc, cell, 'send prefixes');
  return withOverrides(doc, options, { ...doc.overrides, prefix: { ...doc.overrides.prefix, [prefix]: cell } });
}

export function removePrefix(doc: MappingDocument, prefix: string, options: ChangeOptions): MappingDocument {
  if (!(prefix in doc.overrides.prefix)) throw new MappingChangeError(`prefix \`${prefix}\` has no override`);
  const { [prefix]: _removed, ...rest } = doc.overrides.prefix;
  return withOverrides(doc, options, { ...doc.overrides, prefix: rest });
}

/**
 * Pins a key to a quarantine cell: `cell` if given, else the mapping's only quarantine cell.
 */
export function quarantineKey(doc: MappingDocument, key: string, options: ChangeOptions & { cell?: string }): MappingDocument {
  const quarantine = Object.entries(doc.cells)
    .filter(([, c]) => c.state === 'quarantine')
    .map(([id]) => id);
  const cell = options.cell ?? (quarantine.length === 1 ? quarantine[0] : undefined);
  if (cell === undefined) {
    throw new MappingChangeError(
      quarantine.length === 0
        ? 'the mapping has no quarantine cell; add one with `cellctl mapping add-cell ID --quarantine --endpoint URL`'
        : `several quarantine cells (${quarantine.join(', ')}); name one with --cell`,
    );
  }
  requireCell(doc, cell);
  if (doc.cells[cell].state !== 'quarantine') throw new MappingChangeError(`cell \`${cell}\` is ${doc.cells[cell].state}, not a quarantine cell`);
  return pinKey(doc, key, cell, options);
}
