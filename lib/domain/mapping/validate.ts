import { KEY_PATTERN, matchesKeyPattern, PREFIX_PATTERN } from './key';
import { DOCUMENT_LIMITS, documentCost, DocumentLimits, documentEntries, MAX_MAPPING_VERSION } from './limits';
import { MAX_HOME_TABLES } from './homes';
import { HASH_NAME, HOMES_SCHEMA_VERSION, MappingDocument, MappingProblem, SCHEMA_VERSION } from './types';

export const CELL_ID_PATTERN = /^[a-z][a-z0-9-]{1,30}$/;
const CELL_STATES = new Set(['active', 'draining', 'quarantine']);
const TOP_LEVEL = new Set(['schemaVersion', 'version', 'createdAt', 'hash', 'bucketCount', 'homes', 'cells', 'buckets', 'overrides', 'freeze']);
/** An AWS region name (`eu-west-1`, `us-gov-west-1`). */
export const REGION_PATTERN = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;
const MAX_PROBLEMS = 200;

export interface ValidateOptions {
  /** Version of the document this one replaces: the new one must be greater. */
  readonly previousVersion?: number;
  /**
   * The fleet's bucket count, which the routers' HAProxy computes buckets with: a document with
   * another count would send most keys to another cell than the one it names.
   */
  readonly bucketCount?: number;
  /** What a router task holds. @default DOCUMENT_LIMITS */
  readonly limits?: DocumentLimits;
  /** The document's JSON text in bytes, when the reader has it: entries and bytes together are held to `limits.maxCost`. */
  readonly bytes?: number;
  /**
   * Where the router that reads the document listens (`http://127.0.0.1:8080`): no cell may be
   * there, or its requests would loop. @default - not known (publish, the change commands)
   */
  readonly routerEndpoints?: readonly string[];
}

export type ParseResult =
  { readonly ok: true; readonly document: MappingDocument } | { readonly ok: false; readonly problems: readonly MappingProblem[] };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/** True for powers of two from 1024 to 1048576: the bucket counts a router can hold. */
export function isValidBucketCount(n: unknown): n is number {
  return isInt(n) && n >= 1024 && n <= 1_048_576 && (n & (n - 1)) === 0;
}

/**
 * Every problem in a candidate document, each with its JSON path. An empty list means the document
 * may replace the one at `previousVersion`. Readers that get problems keep their last-known-good.
 */
export function validateMapping(doc: unknown, options: ValidateOptions = {}): MappingProblem[] {
  const problems: MappingProblem[] = [];
  const report = (path: string, message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ path, message });
  };
  if (!isObject(doc)) {
    report('$', 'not a JSON object');
    return problems;
  }
  for (const key of Object.keys(doc)) if (!TOP_LEVEL.has(key)) report(`$.${key}`, 'unknown field');
  const schema2 = doc.schemaVersion === HOMES_SCHEMA_VERSION;
  if (doc.schemaVersion !== SCHEMA_VERSION && !schema2)
    report('$.schemaVersion', `must be ${SCHEMA_VERSION}, or ${HOMES_SCHEMA_VERSION} with home regions, got ${JSON.stringify(doc.schemaVersion)}`);
  if (!isInt(doc.version) || doc.version < 1) {
    report('$.version', `must be a positive integer, got ${JSON.stringify(doc.version)}`);
  } else if (doc.version >= MAX_MAPPING_VERSION) {
    // 2^52 itself is refused too: the version after it (a change, a rollback) could not be published.
    report(
      '$.version',
      `${doc.version} is 2^52 (${MAX_MAPPING_VERSION}) or more: the next version and a rollback must stay exact integers below it; publish the change as the current version + 1`,
    );
  } else if (options.previousVersion !== undefined && doc.version <= options.previousVersion) {
    report('$.version', `${doc.version} is not greater than the current version ${options.previousVersion}`);
  }
  if (typeof doc.createdAt !== 'string' || Number.isNaN(Date.parse(doc.createdAt))) report('$.createdAt', 'must be an ISO 8601 timestamp');
  if (doc.hash !== HASH_NAME) report('$.hash', `must be "${HASH_NAME}", got ${JSON.stringify(doc.hash)}`);
  const bucketCount = doc.bucketCount;
  if (!isValidBucketCount(bucketCount))
    report('$.bucketCount', `must be a power of two between 1024 and 1048576, got ${JSON.stringify(bucketCount)}`);
  else if (options.bucketCount !== undefined && bucketCount !== options.bucketCount) {
    report(
      '$.bucketCount',
      `${bucketCount}, but the fleet's routers hash keys into ${options.bucketCount} buckets: most keys would reach another cell than the one the document names; make the document from the fleet (cellctl mapping init)`,
    );
  }
  const tables = schema2 ? validateHomes(doc.homes, report) : undefined;
  if (!schema2 && doc.homes !== undefined)
    report(
      '$.homes',
      `home regions need schemaVersion ${HOMES_SCHEMA_VERSION} (routers that read only schema 1 keep their last-known-good instead of misrouting)`,
    );
  // The document's bucket space: every table's buckets (schema 1: one table).
  const total = isValidBucketCount(bucketCount) ? bucketCount * (tables?.count ?? 1) : undefined;
  const limits = options.limits ?? DOCUMENT_LIMITS;
  const entries = documentEntries(doc);
  if (entries > limits.maxEntries) {
    report(
      '$',
      `${entries} overrides, frozen keys and bucket ranges; a router task holds at most ${limits.maxEntries} (its memory for the mapping, see docs/router.md); route tenants by bucket instead of pinning them one by one`,
    );
  } else if (options.bytes !== undefined && documentCost(entries, options.bytes) > limits.maxCost) {
    const mib = (n: number) => (n / 1048576).toFixed(1);
    report(
      '$',
      `${entries} entries in ${mib(options.bytes)} MiB of JSON cost a router task about ${mib(documentCost(entries, options.bytes))} MiB when it applies the document over one as large; it has ${mib(limits.maxCost)} MiB for the mapping (see docs/router.md): long keys cost more per entry; route tenants by bucket or shorten the keys`,
    );
  }

  const cells = isObject(doc.cells) ? doc.cells : undefined;
  if (!cells) report('$.cells', 'must be an object of cell id → {endpoint, state}');
  const states = new Map<string, string>();
  const endpoints = new Map<string, string>();
  const ownIdentities = new Set((options.routerEndpoints ?? []).flatMap((own) => (URL.canParse(own) ? [endpointIdentity(own)] : [])));
  for (const [id, cell] of Object.entries(cells ?? {})) {
    const at = `$.cells.${id}`;
    if (!CELL_ID_PATTERN.test(id)) report(at, `cell id must match ${CELL_ID_PATTERN.source}`);
    if (!isObject(cell)) {
      report(at, 'must be {endpoint, state}');
      continue;
    }
    if (typeof cell.endpoint !== 'string' || !/^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(cell.endpoint)) {
      report(`${at}.endpoint`, `must be an http(s) URL with host and optional port, got ${JSON.stringify(cell.endpoint)}`);
    } else if (cell.endpoint.slice(cell.endpoint.indexOf('//') + 2).includes('@')) {
      report(`${at}.endpoint`, `${cell.endpoint} has a user name (user@host); a router connects to a host and port only: give scheme://host[:port]`);
    } else if (ownIdentities.has(endpointIdentity(cell.endpoint))) {
      report(
        `${at}.endpoint`,
        `${cell.endpoint} is the router's own address: its tenants' requests would loop through the router; give the cell's address`,
      );
    } else {
      const same = endpoints.get(endpointIdentity(cell.endpoint));
      if (same !== undefined)
        report(
          `${at}.endpoint`,
          `${cell.endpoint} is cell ${same}'s endpoint too: one cell's tenants would be answered by the other; give each cell its own endpoint`,
        );
      else endpoints.set(endpointIdentity(cell.endpoint), id);
    }
    if (typeof cell.state !== 'string' || !CELL_STATES.has(cell.state)) report(`${at}.state`, 'must be active, draining or quarantine');
    if (schema2) {
      if (typeof cell.region !== 'string' || !REGION_PATTERN.test(cell.region))
        report(`${at}.region`, `a schema-2 document names each cell's region (like "eu-west-1"), got ${JSON.stringify(cell.region)}`);
      else if (tables !== undefined && !tables.regions.has(cell.region))
        report(`${at}.region`, `${cell.region} is in no table of $.homes.tables; add it to the table of its home region`);
    }
    for (const key of Object.keys(cell))
      if (key !== 'endpoint' && key !== 'state' && !(schema2 && key === 'region')) report(`${at}.${key}`, 'unknown field');
    states.set(id, String(cell.state));
  }

  if (!Array.isArray(doc.buckets)) {
    report('$.buckets', 'must be an array of {from, to, cell}');
  } else {
    let expected = 0;
    const last = total !== undefined ? total - 1 : Number.MAX_SAFE_INTEGER;
    doc.buckets.forEach((range: unknown, i: number) => {
      const at = `$.buckets[${i}]`;
      if (!isObject(range)) {
        report(at, 'must be {from, to, cell}');
        return;
      }
      const { from, to, cell } = range;
      if (!isInt(from) || !isInt(to)) {
        report(at, `from and to must be integers, got ${JSON.stringify(from)} … ${JSON.stringify(to)}`);
        return;
      }
      if (from > to) report(at, `from ${from} is greater than to ${to}`);
      if (from < 0 || to > last) report(at, `range ${from} … ${to} is out of bounds 0 … ${last}`);
      if (from > expected) report(at, `gap: buckets ${expected} … ${from - 1} belong to no cell`);
      else if (from < expected) report(at, `overlap or unsorted: starts at ${from}, but buckets up to ${expected - 1} are already assigned`);
      expected = Math.max(expected, to + 1);
      const state = typeof cell === 'string' ? states.get(cell) : undefined;
      if (state === undefined) report(`${at}.cell`, `unknown cell ${JSON.stringify(cell)}; list it in $.cells`);
      else if (state !== 'active') report(`${at}.cell`, `cell ${cell} is ${state}; only active cells take buckets`);
    });
    if (total !== undefined && expected < total) report('$.buckets', `gap: buckets ${expected} … ${total - 1} belong to no cell`);
  }

  const overrides = doc.overrides;
  if (!isObject(overrides) || !isObject(overrides.exact) || !isObject(overrides.prefix)) {
    report('$.overrides', 'must be {"exact": {key: cell}, "prefix": {prefix: cell}}');
  } else {
    for (const key of Object.keys(overrides)) if (key !== 'exact' && key !== 'prefix') report(`$.overrides.${key}`, 'unknown field');
    for (const [kind, pattern, maxLength] of [
      ['exact', KEY_PATTERN, 128],
      ['prefix', PREFIX_PATTERN, 127],
    ] as const) {
      const entries = overrides[kind] as Record<string, unknown>;
      // Hot loop (100k+ pins): for-in (Object.keys/values on a 100k-property object cost more than
      // the whole loop), a char-code scan instead of the regex, and a JSON path built only for
      // entries that have a problem.
      for (const key in entries) {
        const cell = entries[key];
        const validKey = matchesKeyPattern(key, maxLength);
        const knownCell = typeof cell === 'string' && states.has(cell);
        if (validKey && knownCell) continue;
        const at = `$.overrides.${kind}[${JSON.stringify(key)}]`;
        if (!validKey) report(at, `${kind === 'exact' ? 'key' : 'prefix'} must match ${pattern.source}`);
        if (!knownCell) report(at, `unknown cell ${JSON.stringify(cell)}; list it in $.cells`);
      }
    }
  }
  if (doc.freeze !== undefined) validateFreeze(doc.freeze, total, report);
  return problems;
}

/**
 * `$.homes`: `{"tables": [{"regions": [...], "prefixes": [...]}, …]}`, table 0 the default home's. No region
 * in two tables, and no prefix that starts another (a key then belongs to one table whatever the
 * order). Returns the table count and regions when the shape is right.
 */
function validateHomes(
  homes: unknown,
  report: (path: string, message: string) => void,
): { readonly count: number; readonly regions: ReadonlySet<string> } | undefined {
  if (!isObject(homes) || !Array.isArray(homes.tables)) {
    report('$.homes', 'schema 2 needs {"tables": [{"regions": [region, …], "prefixes": [prefix, …]}, …]} (table 0: keys with none of the prefixes)');
    return undefined;
  }
  for (const key of Object.keys(homes)) if (key !== 'tables') report(`$.homes.${key}`, 'unknown field');
  const count = homes.tables.length;
  if (count < 1 || count > MAX_HOME_TABLES) report('$.homes.tables', `must list 1 to ${MAX_HOME_TABLES} tables, got ${count}`);
  const regionTable = new Map<string, number>();
  const prefixes: [string, string][] = [];
  homes.tables.forEach((table: unknown, t: number) => {
    const at = `$.homes.tables[${t}]`;
    if (!isObject(table) || !Array.isArray(table.regions) || !Array.isArray(table.prefixes)) {
      report(at, 'must be {"regions": [region, …], "prefixes": [prefix, …]}');
      return;
    }
    for (const key of Object.keys(table)) if (key !== 'regions' && key !== 'prefixes') report(`${at}.${key}`, 'unknown field');
    if (table.regions.length === 0) report(`${at}.regions`, 'must name at least one region');
    table.regions.forEach((region: unknown, i: number) => {
      if (typeof region !== 'string' || !REGION_PATTERN.test(region))
        report(`${at}.regions[${i}]`, `must be a region name like "eu-west-1", got ${JSON.stringify(region)}`);
      else if (regionTable.has(region)) report(`${at}.regions[${i}]`, `${region} is in table ${regionTable.get(region)} too; a region has one table`);
      else regionTable.set(region, t);
    });
    table.prefixes.forEach((prefix: unknown, i: number) => {
      if (typeof prefix !== 'string' || !matchesKeyPattern(prefix, 127)) report(`${at}.prefixes[${i}]`, `must match ${PREFIX_PATTERN.source}`);
      else prefixes.push([prefix, `${at}.prefixes[${i}]`]);
    });
  });
  for (const [a, path] of prefixes) {
    const starts = prefixes.find(([b, other]) => other !== path && a.startsWith(b));
    if (starts)
      report(path, `"${a}" starts with "${starts[0]}" (${starts[1]}): a key would have two home tables; use prefixes that do not start one another`);
  }
  if (count < 1 || count > MAX_HOME_TABLES) return undefined;
  return { count, regions: new Set(regionTable.keys()) };
}

/** `$.freeze`: `{"exact": [key, …], "buckets": [{from, to}, …]}` (contract 3). */
function validateFreeze(freeze: unknown, bucketCount: number | undefined, report: (path: string, message: string) => void): void {
  if (!isObject(freeze) || !Array.isArray(freeze.exact) || !Array.isArray(freeze.buckets)) {
    report('$.freeze', 'must be {"exact": [key, …], "buckets": [{"from": n, "to": m}, …]}');
    return;
  }
  for (const key of Object.keys(freeze)) if (key !== 'exact' && key !== 'buckets') report(`$.freeze.${key}`, 'unknown field');
  freeze.exact.forEach((key: unknown, i: number) => {
    if (typeof key !== 'string' || !matchesKeyPattern(key, 128)) report(`$.freeze.exact[${i}]`, `key must match ${KEY_PATTERN.source}`);
  });
  const last = bucketCount === undefined ? Number.MAX_SAFE_INTEGER : bucketCount - 1;
  freeze.buckets.forEach((range: unknown, i: number) => {
    const at = `$.freeze.buckets[${i}]`;
    if (!isObject(range) || !isInt(range.from) || !isInt(range.to)) {
      report(at, 'must be {"from": n, "to": m} with integers');
      return;
    }
    for (const key of Object.keys(range)) if (key !== 'from' && key !== 'to') report(`${at}.${key}`, 'unknown field');
    if (range.from > range.to) report(at, `from ${range.from} is greater than to ${range.to}`);
    if (range.from < 0 || range.to > last) report(at, `range ${range.from} … ${range.to} is out of bounds 0 … ${last}`);
  });
}

/** Names every host answers for itself: one address, for the comparison. */
const LOOPBACK = /^(localhost|localhost\.localdomain|[^.]+\.localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|\[::ffff:127\.0\.0\.1\]|\[::ffff:7f00:1\])$/;

/**
 * What a router connects to, however the URL spells it: the host without case or a trailing dot
 * (`Cell.Example.` is `cell.example`), loopback under any of its names (`localhost`, `127.0.0.1`,
 * `[::1]`, `0.0.0.0`: one host, whose ports tell its servers apart), the port (the scheme's default
 * when left out). The scheme is left out: `http://h:443` and `https://h:443` are one socket.
 * The WHATWG URL parser already writes IPv4 in its dotted form (`127.1` is `127.0.0.1`).
 */
export function endpointIdentity(endpoint: string): string {
  const url = new URL(endpoint);
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${LOOPBACK.test(host) ? 'loopback' : host}:${port}`;
}

/** The document's size against what a router task holds, for readers that have its text. */
export function sizeProblem(bytes: number, limits: DocumentLimits = DOCUMENT_LIMITS): MappingProblem | undefined {
  if (bytes <= limits.maxBytes) return undefined;
  return {
    path: '$',
    message: `the document is ${(bytes / 1048576).toFixed(1)} MiB; a router task holds at most ${limits.maxBytes / 1048576} MiB (its memory for the mapping, see docs/router.md)`,
  };
}

/** Parses JSON text and validates it; never throws. */
export function parseMapping(text: string, options: ValidateOptions = {}): ParseResult {
  // Before parsing: parsing costs the reader several times the text.
  const tooLarge = sizeProblem(Buffer.byteLength(text), options.limits);
  if (tooLarge) return { ok: false, problems: [tooLarge] };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [{ path: '$', message: `not valid JSON: ${(error as Error).message}` }] };
  }
  const problems = validateMapping(doc, { ...options, bytes: Buffer.byteLength(text) });
  return problems.length === 0 ? { ok: true, document: doc as MappingDocument } : { ok: false, problems };
}

/** One line per problem: `$.buckets[3]: gap: …`. */
export function formatProblems(problems: readonly MappingProblem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join('\n');
}
