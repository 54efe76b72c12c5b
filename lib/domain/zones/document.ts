/**
 * The zones document (docs/operating.md, "Draining a zone"): one per region, in the region's
 * mapping bucket, saying how much of its normal share of new requests each Availability Zone takes.
 * Router agents poll it beside the mapping and set their zonal servers' weights from it: a zone at
 * weight 0 gets no new request from any router task, requests in flight finish. Versioned like the
 * mapping: an agent applies only a valid document whose version is above the one in force, and
 * keeps its last-known-good otherwise.
 */
export interface ZonesDocument {
  readonly schemaVersion: 1;
  /** The region whose zones these are (a document is never applied in another region). */
  readonly region: string;
  /** Raised by every change; an agent ignores a document not above the version in force. */
  readonly version: number;
  readonly updatedAt: string;
  /** By AZ ID (the same physical zone in every account). A zone the document does not list takes its full share. */
  readonly zones: Readonly<Record<string, ZoneState>>;
}

export interface ZoneState {
  /** Percent of the zone's normal share of new requests: 100 as usual, 0 drained. */
  readonly weight: number;
  /** Why (shown by `cellctl zone status`). */
  readonly reason?: string;
  /** When the weight was last changed. */
  readonly since?: string;
}

export interface ZonesProblem {
  readonly path: string;
  readonly message: string;
}

export type ZonesParseResult =
  { readonly ok: true; readonly document: ZonesDocument } | { readonly ok: false; readonly problems: readonly ZonesProblem[] };

/** An AZ ID: `use1-az1`, `euw1-az3`, a Local Zone's `usw2-lax1-az1` (names like `us-east-1a` differ per account and are refused). */
export const ZONE_ID_PATTERN = /^[a-z]+\d+(-[a-z]+\d+)?-az\d+$/;

/** A zones document is tiny; anything larger is not one. */
export const ZONES_MAX_BYTES = 64 * 1024;

export const FULL_WEIGHT = 100;

/**
 * Under own-zone affinity (router.zoneAffinity), what each other zone's server weighs against the
 * own zone's FULL_WEIGHT: about 98% of a task's requests stay in its zone at three zones.
 */
export const OTHER_ZONE_WEIGHT = 1;

export interface ZonesValidateOptions {
  /** The region this reader serves: a document of another region is refused. */
  readonly region?: string;
  /** The zones this reader knows (the fleet's for the region): a document naming another is refused. */
  readonly knownZones?: readonly string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every problem of `doc` as a zones document, with the fix in each message; empty when it is valid. */
export function validateZones(doc: unknown, options: ZonesValidateOptions = {}): ZonesProblem[] {
  if (!isRecord(doc))
    return [{ path: '$', message: 'not an object: a zones document is {"schemaVersion":1,"region":…,"version":…,"updatedAt":…,"zones":{…}}' }];
  const problems: ZonesProblem[] = [];
  if (doc.schemaVersion !== 1)
    problems.push({ path: '$.schemaVersion', message: `${JSON.stringify(doc.schemaVersion)}: this router reads schemaVersion 1` });
  if (typeof doc.region !== 'string' || !/^[a-z]{2}(-[a-z]+)+-\d+$|^local$/.test(doc.region))
    problems.push({ path: '$.region', message: `${JSON.stringify(doc.region)}: give the region, for example eu-west-1` });
  else if (options.region !== undefined && doc.region !== options.region)
    problems.push({
      path: '$.region',
      message: `the document is for ${doc.region}, this is ${options.region}: write each region's zones to its own bucket`,
    });
  if (typeof doc.version !== 'number' || !Number.isSafeInteger(doc.version) || doc.version < 1)
    problems.push({ path: '$.version', message: `${JSON.stringify(doc.version)}: give a whole number of 1 or more, raised by every change` });
  if (typeof doc.updatedAt !== 'string' || Number.isNaN(Date.parse(doc.updatedAt)))
    problems.push({ path: '$.updatedAt', message: `${JSON.stringify(doc.updatedAt)}: give an ISO 8601 time` });
  if (!isRecord(doc.zones)) {
    problems.push({ path: '$.zones', message: 'give an object of AZ ID → {"weight": 0-100}' });
    return problems;
  }
  const entries = Object.entries(doc.zones);
  for (const [zone, state] of entries) {
    const at = `$.zones.${zone}`;
    if (!ZONE_ID_PATTERN.test(zone))
      problems.push({ path: at, message: `\`${zone}\` is not an AZ ID (for example use1-az1); zone names like us-east-1a differ per account` });
    else if (options.knownZones && !options.knownZones.includes(zone))
      problems.push({
        path: at,
        message: `\`${zone}\` is not one of this region's zones (${options.knownZones.join(', ')}); check the AZ ID against the fleet file`,
      });
    if (!isRecord(state)) {
      problems.push({ path: at, message: 'give {"weight": 0-100}' });
      continue;
    }
    if (typeof state.weight !== 'number' || !Number.isInteger(state.weight) || state.weight < 0 || state.weight > FULL_WEIGHT)
      problems.push({
        path: `${at}.weight`,
        message: `${JSON.stringify(state.weight)}: give a whole percent from 0 (drained) to 100 (its full share)`,
      });
    if (state.reason !== undefined && (typeof state.reason !== 'string' || state.reason.length > 256))
      problems.push({ path: `${at}.reason`, message: 'give a string of at most 256 characters' });
    if (state.since !== undefined && (typeof state.since !== 'string' || Number.isNaN(Date.parse(state.since))))
      problems.push({ path: `${at}.since`, message: `${JSON.stringify(state.since)}: give an ISO 8601 time` });
  }
  const zones = options.knownZones ?? entries.map(([zone]) => zone);
  const serving = zones.filter((zone) => {
    const weight = (doc.zones as Record<string, { weight?: unknown }>)[zone]?.weight;
    return weight === undefined || (typeof weight === 'number' && weight > 0);
  });
  if (zones.length > 0 && serving.length === 0)
    problems.push({
      path: '$.zones',
      message: 'every zone is drained: new requests would have nowhere to go; leave at least one zone a weight above 0',
    });
  return problems;
}

/** Parses and validates a zones document's text. */
export function parseZones(text: string, options: ZonesValidateOptions = {}): ZonesParseResult {
  const bytes = Buffer.byteLength(text);
  if (bytes > ZONES_MAX_BYTES)
    return { ok: false, problems: [{ path: '$', message: `${bytes} bytes: a zones document is at most ${ZONES_MAX_BYTES}` }] };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [{ path: '$', message: `not valid JSON: ${(error as Error).message}` }] };
  }
  const problems = validateZones(doc, options);
  return problems.length === 0 ? { ok: true, document: doc as ZonesDocument } : { ok: false, problems };
}

/** The first zones document of a region: every zone at its full share. */
export function initialZones(region: string, zones: readonly string[], now = new Date().toISOString()): ZonesDocument {
  return { schemaVersion: 1, region, version: 1, updatedAt: now, zones: Object.fromEntries(zones.map((zone) => [zone, { weight: FULL_WEIGHT }])) };
}

/** The weight of `zone` in `doc` (a zone it does not list takes its full share). */
export const weightOf = (doc: ZonesDocument | undefined, zone: string): number => doc?.zones[zone]?.weight ?? FULL_WEIGHT;

/**
 * `doc` with `zone` at `weight`, the version raised. Refused (with the fix) when it would drain
 * every zone of `zones` or names a zone outside them.
 */
export function withZoneWeight(
  doc: ZonesDocument,
  zone: string,
  weight: number,
  o: { readonly zones: readonly string[]; readonly reason?: string; readonly now?: string },
): ZonesDocument {
  if (!o.zones.includes(zone))
    throw new Error(`zone ${zone} is not one of ${doc.region}'s zones (${o.zones.join(', ')}); give an AZ ID from the fleet file`);
  if (!Number.isInteger(weight) || weight < 0 || weight > FULL_WEIGHT) throw new Error(`weight ${weight}: give a whole percent from 0 to 100`);
  const now = o.now ?? new Date().toISOString();
  const next: ZonesDocument = {
    ...doc,
    version: doc.version + 1,
    updatedAt: now,
    zones: {
      ...Object.fromEntries(o.zones.map((z) => [z, doc.zones[z] ?? { weight: FULL_WEIGHT }])),
      [zone]: {
        weight,
        since: now,
        ...(o.reason ? { reason: o.reason } : weight < FULL_WEIGHT && doc.zones[zone]?.reason ? { reason: doc.zones[zone].reason } : {}),
      },
    },
  };
  const problems = validateZones(next, { knownZones: o.zones });
  if (problems.length > 0) throw new Error(problems.map((p) => `${p.path}: ${p.message}`).join('; '));
  return next;
}

/**
 * The weights an undrain steps through, from `steps` (percent of the zone's share, rising, ending at
 * 100; `1,5,25,50,100` by default), above the weight the zone has now.
 */
export function undrainSteps(current: number, steps: readonly number[] = [1, 5, 25, 50, 100]): number[] {
  for (const [i, s] of steps.entries()) {
    if (!Number.isInteger(s) || s < 1 || s > FULL_WEIGHT) throw new Error(`--steps: ${s} is not a whole percent from 1 to 100`);
    if (i > 0 && s <= steps[i - 1]) throw new Error(`--steps: ${steps.join(',')} must rise (${s} after ${steps[i - 1]})`);
  }
  if (steps[steps.length - 1] !== FULL_WEIGHT) throw new Error(`--steps: ${steps.join(',')} must end at 100 (the zone's full share)`);
  return steps.filter((s) => s > current);
}

/**
 * The share of a cell's new requests each zone takes: its weight over the sum of the weights of the
 * zones the cell has (zones the cell is not in take nothing). The surviving zones of a drained one
 * each take N/(N−1) of what they took before.
 */
export function zoneShares(doc: ZonesDocument | undefined, zones: readonly string[]): Map<string, number> {
  const total = zones.reduce((n, z) => n + weightOf(doc, z), 0);
  return new Map(zones.map((z) => [z, total === 0 ? 0 : weightOf(doc, z) / total]));
}
