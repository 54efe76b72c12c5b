import { MAX_ROUTER_SLOTS, PartitionKeySource } from '../fleet';
import { KEY_PATTERN } from '../mapping';
import { FROZEN_BACKEND, FROZEN_RETRY_AFTER_SECONDS } from './freeze';

/** Everything the generated HAProxy configuration depends on. */
export interface HaproxyConfigOptions {
  /** Where HAProxy listens for clients. */
  readonly bind: { readonly address: string; readonly port: number };
  /** Runtime API socket (admin level) the agent drives HAProxy through. */
  readonly adminSocket: string;
  /** Directory holding the map files and the 503 error file. */
  readonly stateDir: string;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  /** Backend slots: the most cells one mapping may reference. */
  readonly slots: number;
  /** Concurrent requests per cell; more wait in the cell's queue. */
  readonly cellMaxConn: number;
  /** How long a request may wait in a saturated cell's queue before it gets 503. @default 1000 */
  readonly queueTimeoutMs?: number;
  /** Health-check path on every cell. */
  readonly healthCheckPath: string;
  /** Add `x-cell` and `x-mapping-version` to responses. @default false */
  readonly debugHeaders?: boolean;
  /** Prometheus exporter and stats page on this loopback port. */
  readonly statsPort?: number;
  /** Process-wide connection cap (2 file descriptors per proxied connection). @default 4000 */
  readonly maxConn?: number;
}

/**
 * Map files the agent fills at runtime (prepare / add / commit). Route maps name backend slots
 * directly, so a request costs one lookup per step: `exact` (key → slot), `prefix` (prefix →
 * slot), `buckets` (bucket ranges as IPv4 networks → slot, see `bucketNetworks`), `cells`
 * (slot → cell: the agent's slot registry and the `x-cell` debug header) and `meta` (version).
 */
export const MAP_FILES = {
  exact: 'exact.map',
  prefix: 'prefix.map',
  buckets: 'buckets.map',
  cells: 'cells.map',
  meta: 'meta.map',
} as const;

export const slotName = (slot: number) => `slot${slot}`;

/** Where requests with a missing or invalid key go: 400 with a JSON body saying which. */
export const BAD_KEY_BACKEND = 'bad_key';

/** Where requests go when no route matched: 503, no mapping loaded. */
export const NO_MAPPING_BACKEND = 'no_mapping';

/** The DESIGN.md bucket of the key on the left: first 4 bytes of SHA-256, big-endian, mod B. */
export const bucketExpression = (bucketCount: number) => `sha2(256),bytes(0,4),hex,hex2i,and(${bucketCount - 1})`;

/**
 * A bucket range as IPv4 networks (`0.0.32.0/19`), for the `buckets` map: HAProxy casts the
 * integer bucket to the address with the same value and finds its network by longest prefix.
 * A range of n buckets becomes at most 2·log2(n) networks.
 */
export function bucketNetworks(from: number, to: number): string[] {
  const out: string[] = [];
  let at = from;
  while (at <= to) {
    let size = 1;
    while (at % (size * 2) === 0 && at + size * 2 - 1 <= to) size *= 2;
    out.push(`${(at >>> 24) & 255}.${(at >>> 16) & 255}.${(at >>> 8) & 255}.${at & 255}/${32 - Math.log2(size)}`);
    at += size;
  }
  return out;
}

/** Where the agent saves `show servers state` after every apply. */
export const SERVER_STATE_FILE = 'servers.state';

/** The sample expression that extracts the partition key, per the fleet's key source. */
export function keyFetch(source: PartitionKeySource): string {
  switch (source.source) {
    // fhdr: the whole value; hdr would split `a,b` at the comma and route it as `b`.
    case 'header': return `req.fhdr(${source.name})`;
    // path "/a/b/c": field 1 is empty, segment 1 is field 2.
    case 'path': return `path,field(${source.segment + 1},/)`;
    case 'host': return `req.fhdr(host),field(1,:),field(${source.label},.)`;
  }
}

function jsonError(status: number, error: string): string {
  return `http-request return status ${status} content-type application/json string '{"error":"${error}"}'`;
}

/**
 * The HAProxy configuration of one router task. The data plane does everything per request:
 * key extraction and validation (400 with a JSON body), the DESIGN.md bucket
 * (`sha2(256),bytes(0,4),hex,hex2i,and(B-1)`), exact → longest prefix → bucket lookups in maps the
 * agent swaps atomically at runtime, and one backend slot per cell with its own maxconn and a
 * bounded queue (503 + Retry-After when it times out). `retries 0` and no redispatch: a request
 * never goes to a second cell. The hot path has no variables, one regex and three map lookups, since
 * every rule costs throughput (`npm run bench:router`).
 */
export function renderHaproxyConfig(o: HaproxyConfigOptions): string {
  if ((o.bucketCount & (o.bucketCount - 1)) !== 0 || o.bucketCount < 1 || o.bucketCount > 2 ** 20) {
    throw new Error(`bucketCount ${o.bucketCount} must be a power of two up to 1048576`);
  }
  if (!Number.isInteger(o.slots) || o.slots < 1 || o.slots > MAX_ROUTER_SLOTS) throw new Error(`slots ${o.slots} must be 1-${MAX_ROUTER_SLOTS}`);
  const map = (name: keyof typeof MAP_FILES) => `${o.stateDir}/${MAP_FILES[name]}`;
  const lines = [
    'global',
    `  maxconn ${o.maxConn ?? 4000}`,
    // A unix socket in local mode; `ipv4@host:port` in a task, where the agent is another container.
    o.adminSocket.startsWith('ipv4@') ? `  stats socket ${o.adminSocket} level admin` : `  stats socket ${o.adminSocket} mode 600 level admin expose-fd listeners`,
    '  stats timeout 30s',
    // Default 16 KiB buffers: larger ones cost every request memory bandwidth (measured: about
    // half the throughput at 64 KiB); map payloads are chunked below the buffer size instead.
    '  log stdout format raw local0 info',
    // No lookup cache: tenant keys are too many for it to hit, and every miss costs more than the
    // lookup itself (measured: about 15% of the router's CPU per request with random keys).
    '  tune.pattern.cache-size 0',
    // Server addresses and states as the agent last set them: a restarted HAProxy routes at once.
    `  server-state-file ${o.stateDir}/${SERVER_STATE_FILE}`,
    '',
    'defaults',
    '  load-server-state-from-file global',
    '  mode http',
    '  log global',
    '  option httplog',
    '  option dontlognull',
    // Log failures only (errors, timeouts, 5xx); per-request traffic is in the stats the agent exports.
    '  option dontlog-normal',
    '  timeout connect 2s',
    '  timeout client 30s',
    '  timeout server 30s',
    `  timeout queue ${o.queueTimeoutMs ?? 1000}ms`,
    '  timeout http-keep-alive 10s',
    '  retries 0',
    '  option http-keep-alive',
    '',
  ];
  if (o.statsPort !== undefined) {
    lines.push(
      'frontend stats',
      `  bind 127.0.0.1:${o.statsPort}`,
      '  http-request use-service prometheus-exporter if { path /metrics }',
      '  stats enable',
      '  stats uri /stats',
      '',
    );
  }
  // The key is fetched where it is used rather than kept in a variable: a string variable costs an
  // allocation per request, more than reading a header again.
  const key = keyFetch(o.partitionKey);
  // Two key headers would make the key ambiguous.
  const repeated = o.partitionKey.source === 'header' ? ` or { req.fhdr_cnt(${o.partitionKey.name}) gt 1 }` : '';
  lines.push(
    'frontend router',
    `  bind ${o.bind.address}:${o.bind.port}`,
    // A good key costs one regex here; a missing key fails it too (no sample), and which 400 to
    // answer is worked out only on that path, in the bad-key backend.
    `  use_backend ${BAD_KEY_BACKEND} if !{ ${key} -m reg ${KEY_PATTERN.source} }${repeated}`,
    // Exact, then longest prefix, then the bucket: each map names the cell's backend slot. The
    // bucket is an integer below 2^20, which HAProxy casts to the IPv4 address with that value, so
    // bucket ranges are stored as a few networks and found by one longest-prefix tree lookup.
    `  use_backend %[${key},map_str(${map('exact')})] if { ${key},map_str(${map('exact')}) -m found }`,
    `  use_backend %[${key},map_beg(${map('prefix')})] if { ${key},map_beg(${map('prefix')}) -m found }`,
    `  use_backend %[${key},${bucketExpression(o.bucketCount)},map_ip(${map('buckets')})]`,
    // Nothing matched (no mapping loaded yet): use_backend with an empty name falls through to here.
    `  default_backend ${NO_MAPPING_BACKEND}`,
  );
  if (o.debugHeaders) {
    lines.push(
      `  http-after-response set-header x-cell %[be_name,map(${map('cells')})] if { be_name,map(${map('cells')}) -m found }`,
      `  http-after-response set-header x-mapping-version %[str(version),map(${map('meta')},none)]`,
    );
  }
  lines.push(
    '',
    `backend ${BAD_KEY_BACKEND}`,
    `  ${jsonError(400, 'missing partition key')} if !{ ${key} -m found } or { ${key} -m len 0 }`,
    `  ${jsonError(400, 'invalid partition key')}`,
    '',
    `backend ${NO_MAPPING_BACKEND}`,
    // Never true; keeps the cells and version maps loaded so the agent can update them either way.
    `  http-request set-var(txn.unused) str(version),map(${map('meta')},none),map(${map('cells')}) if FALSE`,
    `  ${jsonError(503, 'no mapping loaded')} hdr retry-after 5`,
  );
  lines.push(
    '',
    // Keys a move is copying (contract 3): the agent routes them here through the maps.
    `backend ${FROZEN_BACKEND}`,
    `  http-request return status 503 content-type application/json hdr retry-after ${FROZEN_RETRY_AFTER_SECONDS} hdr cache-control no-store string '{"error":"frozen","message":"this tenant is moving to another cell; retry in a second","retryAfterSeconds":${FROZEN_RETRY_AFTER_SECONDS}}'`,
  );
  lines.push('');
  const check = `option httpchk GET ${o.healthCheckPath}`;
  for (let slot = 0; slot < o.slots; slot++) {
    lines.push(
      `backend ${slotName(slot)}`,
      '  balance first',
      `  ${check}`,
      '  http-check expect status 200-399',
      `  errorfile 503 ${o.stateDir}/503.http`,
      // Unassigned slots stay in maintenance; the agent sets the address and enables them.
      `  server cell 127.0.0.1:1 disabled check inter 1s fall 2 rise 1 maxconn ${o.cellMaxConn}`,
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}

const ERROR_503_BODY = '{"error":"cell unavailable or saturated; retry later"}';

/**
 * The response HAProxy sends when a cell's queue times out or the cell is down. Keep-alive (an
 * exact content-length, no `connection: close`): a flooded cell's clients do not reconnect for
 * every rejected request, which would cost the router CPU that healthy cells need.
 */
export const ERROR_503 = [
  'HTTP/1.1 503 Service Unavailable',
  'content-type: application/json',
  'retry-after: 1',
  'cache-control: no-store',
  `content-length: ${Buffer.byteLength(ERROR_503_BODY)}`,
  '',
  ERROR_503_BODY,
].join('\r\n');
