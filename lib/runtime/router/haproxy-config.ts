// The fleet's modules by file, not its index: the index loads the TypeScript config loader (tsx),
// which the agent's bundle must not carry.
import {
  DEFAULT_MAX_BODY_BYTES,
  MAX_BODY_BYTES_LIMIT,
  MAX_ELSEWHERE_REGIONS,
  MAX_ROUTER_SLOTS,
  ROUTED_KEY_HEADER,
} from '../../domain/fleet/defaults';
import type { PartitionKeySource } from '../../domain/fleet/types';
import { ROUTER_ERROR_HEADER } from '../../domain/lanes/retry';
import { KEY_PATTERN, ROUTER_RESERVED_MIB, ROUTER_TASK_MEMORY_MIB } from '../../domain/mapping';
import { FROZEN_BACKEND, FROZEN_RETRY_AFTER_SECONDS } from './freeze';

/** Everything the generated HAProxy configuration depends on. */
export interface HaproxyConfigOptions {
  /** Where HAProxy listens for clients. */
  readonly bind: { readonly address: string; readonly port: number };
  /**
   * Clients arrive through the NLB with a PROXY protocol v2 header (the target group's
   * `proxy_protocol_v2.enabled`): `accept-proxy` on the bind, so HAProxy sees the client's address.
   * The two go together: either alone breaks every connection. @default false
   */
  readonly acceptProxy?: boolean;
  /**
   * Readiness for the load balancer, served by HAProxy itself: 200 while a mapping is in force in this
   * HAProxy, else 503. It survives an agent restart. A full task (past `fullTask`'s `shed`) reports
   * 503 too, but only while the agent says it may (`READINESS_MAP`, from its target group's
   * health: at most half of a group's tasks out at once, see full-readiness.ts): a flood fills every
   * task alike, and readiness failing on all of them together would take the whole group out (ECS
   * replaces tasks the load balancer finds unhealthy).
   */
  readonly readyBind?: { readonly address: string; readonly port: number };
  /** Runtime API socket (admin level) the agent drives HAProxy through. */
  readonly adminSocket: string;
  /** Directory holding the map files and the 503 error file. */
  readonly stateDir: string;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  /**
   * Route home tables (a schema-2 mapping's `homes`, the fleet's `homes`): one more map lookup per
   * request routed by bucket. @default false: one table (a document with more is refused)
   */
  readonly homeTables?: boolean;
  /** Backend slots: the most cells one mapping may reference. */
  readonly slots: number;
  /** Concurrent requests per cell (split across the cell's zonal servers); more wait in the cell's queue. */
  readonly cellMaxConn: number;
  /**
   * Requests one tenant may have in flight through this router at once: a share of its cell's
   * `cellMaxConn`, so one tenant's slow or numerous requests cannot take every slot of its cell.
   * Its requests beyond it are answered 429 with Retry-After at once (`tenantMaxConnOf(cellMaxConn)`
   * is half of the cell's slots). @default - no per-tenant cap
   */
  readonly tenantMaxConn?: number;
  /**
   * Requests one client address may have in flight to one cell, whichever keys it sends (at most
   * `tenantMaxConn`): one address can neither spend a tenant's whole share with that tenant's key nor
   * take the cell with many keys, each within its tenant's cap. Only with `tenantMaxConn`.
   * @default - no per-address cap
   */
  readonly clientMaxConnPerCell?: number;
  /** How long a request may wait in a saturated cell's queue before it gets 503. @default 1000 */
  readonly queueTimeoutMs?: number;
  /** Health-check path on every cell. */
  readonly healthCheckPath: string;
  /** Add `x-cell` and `x-mapping-version` to responses. @default false */
  readonly debugHeaders?: boolean;
  /** Prometheus exporter and stats page on this loopback port. */
  readonly statsPort?: number;
  /**
   * Client connections the router frontend accepts (see `connectionLimits`); HAProxy's global
   * `maxconn` is this plus `RESERVED_CONNECTIONS` for readiness, stats and the runtime API. @default 4000
   */
  readonly maxConn?: number;
  /** The whole request (headers and body) must arrive within this time, else 408. @default 5000 */
  readonly requestTimeoutMs?: number;
  /** How long a client may leave its response unread (or stop sending) before its connection is closed. @default CLIENT_TIMEOUT_MS */
  readonly clientTimeoutMs?: number;
  /**
   * Largest request body a `content-length` may announce, bytes (413 above it, before anything is
   * read). A body that fits the router's buffer (16 KiB with the headers) is read whole, within
   * `requestTimeoutMs`, before a cell slot is taken; a larger one, or a chunked one, is read until
   * the buffer is full within that time and then streamed to the cell, each pause bounded by
   * `clientTimeoutMs` and each address's and tenant's share of the cell by the per-tenant caps.
   * A chunked body announces no length and is not counted: the cell's own limit applies.
   * @default DEFAULT_MAX_BODY_BYTES (10 MiB)
   */
  readonly maxBodyBytes?: number;
  /**
   * Requests with a missing or invalid key one client address may send per 10 s before they get 429;
   * over twice this, while they are most of what the address sends, its new connections are refused.
   * @default 100
   */
  readonly badKeysPer10s?: number;
  /** Connections one client address (from the PROXY header behind the NLB) may hold at once; more are refused. @default maxConn / 20, at least 10 */
  readonly maxConnPerClient?: number;
  /** Requests one client address may send per 10 s; more get 429 until its rate falls. @default 20000 */
  readonly requestsPerClientPer10s?: number;
  /** Tenants whose bucket is kept (`KEY_CACHE_ENTRIES`), more than `maxConn`: beyond them the least recently seen are forgotten and computed again. @default KEY_CACHE_ENTRIES */
  readonly keyCacheEntries?: number;
  /** Client addresses whose connections and rates are tracked at once. @default CLIENT_TABLE_ENTRIES */
  readonly clientTableEntries?: number;
  /** Servers per cell backend: one per zonal address of the cell's endpoint. @default 3 */
  readonly zones?: number;
  /** CA bundle verifying `https://` cells. @default '@system-ca' (the system's trusted CAs) */
  readonly caFile?: string;
  /** Soft-stop limit: in-flight requests are cut this long after SIGUSR1; keep it below the ECS stop timeout. @default 25000 */
  readonly hardStopAfterMs?: number;
}

/** Memory of a router task (HAProxy and the agent); its connection limits (`connectionLimits`) and the largest mapping it holds (`DOCUMENT_LIMITS`) follow from it. */
export { ROUTER_TASK_MEMORY_MIB };

/** The environment variable of HAProxy's configuration that says its bucket count (read by the agent with `show env`). */
export const BUCKET_COUNT_ENV = 'CELL_BUCKET_COUNT';

/**
 * The environment variable of HAProxy's configuration set when it routes home tables (a schema-2
 * mapping's `homes`): the agent refuses a document with more than one table without it.
 */
export const HOME_TABLES_ENV = 'CELL_HOME_TABLES';

/** HAProxy's environment variable listing where it listens (`http://host:port …`), read by the agent. */
export const ROUTER_ADDRESSES_ENV = 'CELL_ROUTER_ADDRESSES';

/** Every address the router's frontends listen on, as URLs a document's endpoint is compared with. */
export function routerAddresses(o: Pick<HaproxyConfigOptions, 'bind' | 'readyBind' | 'statsPort'>): string[] {
  const url = (address: string, port: number) => `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  return [
    url(o.bind.address, o.bind.port),
    ...(o.readyBind ? [url(o.readyBind.address, o.readyBind.port)] : []),
    ...(o.statsPort !== undefined ? [url('127.0.0.1', o.statsPort)] : []),
  ];
}

/**
 * Tenants whose bucket a router keeps (the `keys` stick table: the key, up to 129 bytes, and the
 * bucket + 1 in `gpt0`, about 256 bytes an entry: 32 MiB of the task's reserve). A key seen again
 * costs a table lookup instead of SHA-256. When the table is full, HAProxy drops the least recently
 * used entries that no request holds (it is larger than the connection limit, so there always are
 * some: every valid key gets an entry); a dropped tenant's bucket is computed again on its next
 * request.
 */
export const KEY_CACHE_ENTRIES = 128_000;

/**
 * Bytes of the partition key the router captures and routes by: one more than a valid key can have,
 * so a longer (invalid) key is cut to a length the key check still refuses, never to a valid key.
 */
export const KEY_CAPTURE_LEN = 129;

/** Client addresses tracked at once (the `clients` stick table, about 128 bytes an entry). */
export const CLIENT_TABLE_ENTRIES = 100_000;

export { tenantMaxConnOf } from '../../domain/fleet/defaults';

/** The stick table of tenants' buckets and request rates. */
/**
 * `timeout client`: a client that does not read its response releases its cell slot within this
 * (10 s; it was 30, and 210 unread large responses held a cell for about 30 s). Long enough for a
 * client on a poor link to resume reading.
 */
export const CLIENT_TIMEOUT_MS = 10_000;

export const KEY_TABLE = 'keys';
/** The stick table of a client address's requests in flight per cell (`<address>@<slot>`). */
export const CLIENT_CELL_TABLE = 'client_cells';

/**
 * Seconds over which the keys table counts each tenant's requests (`http_req_rate`): what
 * `cellctl capacity` and the agent's per-cell tenant metrics read. The counter lives in the entry
 * the bucket is cached in, so counting costs no second lookup.
 */
export const TENANT_RATE_PERIOD_SECONDS = 10;

/** The stick table of client addresses: connections, request rate, bad-key rate (gpc0). */
export const CLIENT_TABLE = 'clients';

/**
 * The map a full task's readiness reads (`FULL_MAY_LEAVE_KEY`): the Unix time until which this task
 * may report itself full, set by the agent (FullReadinessGate; 0 while it may not). It ships as 0,
 * so a restarted HAProxy stays in until the agent says otherwise, and a permission expires by itself
 * when the agent stops renewing it. A map, not a process variable: HAProxy's `set var` on the
 * runtime API is experimental.
 */
export const READINESS_MAP = 'readiness.map';
export const FULL_MAY_LEAVE_KEY = 'full-may-leave';
/** The readiness map as the image ships it: stay in. */
export const READINESS_MAP_CONTENT = `${FULL_MAY_LEAVE_KEY} 0\n`;

/** Where HAProxy serves readiness to the NLB's health check in a router task. */
export const READY_PORT = 8081;

/**
 * When a router task counts as full, against its frontend's `maxConn`: past `shed` connections the
 * addresses holding more than `heavy` get no new connection and their requests 503 and close;
 * past `answer` every request gets a fast 503 (the last slots are kept to say so, where a connect
 * past `maxConn` would wait in the kernel's backlog until the client timed out).
 */
export function fullTask(maxConn: number, perClient: number): { shed: number; answer: number; heavy: number } {
  return { shed: Math.floor(maxConn * 0.9), answer: maxConn, heavy: Math.max(2, Math.floor(perClient / 4)) };
}

/**
 * Connections the router frontend accepts past `maxConn` only to answer them at once (503, closed):
 * a connect past the frontend's own `maxconn` would wait in the kernel's backlog until the client
 * timed out. A quarter more: a wave of reconnects from shed addresses lands there, not in the
 * backlog. They cost a client connection and a small answer each, no cell connection or TLS session.
 */
export const overflowConnections = (maxConn: number): number => Math.max(20, Math.ceil(maxConn / 4));

/** Memory an overflow connection may cost: a request and a response buffer, no cell connection or TLS session. */
export const BYTES_PER_OVERFLOW_CONNECTION = 32 * 1024;

/** Connections above the router frontend's limit kept for readiness checks, stats and the runtime API. */
export const RESERVED_CONNECTIONS = 100;

/**
 * Memory one client connection may cost at worst: a stream's two 16 KiB buffers, the client and
 * server connections, and a TLS session to the cell (OpenSSL keeps about 30 KiB per session).
 */
export const BYTES_PER_CONNECTION = 64 * 1024;

/**
 * Connection limits for a router task with `memoryMiB` (the agent and HAProxy's own footprint take
 * `reservedMiB`): the router frontend's `maxConn`, and the file-descriptor limit HAProxy needs for it
 * (two descriptors per connection of the global maxconn, the overflow's included, and the listeners). The overflow it only answers in (a quarter of `maxConn`) is in the memory budget.
 */
export function connectionLimits(memoryMiB: number, reservedMiB = ROUTER_RESERVED_MIB): { maxConn: number; nofile: number } {
  const budget = (memoryMiB - reservedMiB) * 1024 * 1024;
  if (budget <= 0) throw new Error(`a router task with ${memoryMiB} MiB has no memory for connections (${reservedMiB} MiB reserved)`);
  // Each served connection brings a quarter of an overflow one (overflowConnections) into the budget.
  const maxConn = Math.floor(budget / (BYTES_PER_CONNECTION + BYTES_PER_OVERFLOW_CONNECTION / 4) / 100) * 100;
  // HAProxy sizes its descriptors from the global maxconn (two per connection), overflow included.
  return { maxConn, nofile: 2 * (maxConn + overflowConnections(maxConn) + RESERVED_CONNECTIONS) + 1000 };
}

/**
 * Client-sent headers the router removes: only the router may say which cell, which version, or who
 * and where the client is. Every `x-forwarded-*` (for, proto, host, port, prefix, …), the other
 * conventions for the client's address or the original URL, and every header whose name has an
 * underscore (`x_tenant_id`): CGI-style servers and several frameworks read `x_tenant_id` and
 * `x-tenant-id` as the same variable, so a client could hand the cell another tenant's key next to
 * the one the router routed by.
 */
export const SPOOFABLE_HEADERS = [
  'x-cell',
  'x-mapping-version',
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'client-ip',
  'true-client-ip',
  'x-cluster-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-originating-ip',
  'x-remote-ip',
  'x-remote-addr',
  'x-original-url',
  'x-original-uri',
  'x-rewrite-url',
  'x-original-host',
  'x-host',
] as const;

/** The names `SPOOFABLE_HEADERS` removes, as one regular expression over header names (lower case, as HAProxy holds them). */
export const SPOOFABLE_HEADER_PATTERN = `^(x-forwarded-|(${SPOOFABLE_HEADERS.join('|')})$|[^_]*_)`;

/**
 * Path forms refused for path-keyed fleets: dot segments (`/a/../b`, `/./`) and encoded dots,
 * slashes and backslashes (`%2e`, `%2f`, `%5c`), and raw backslashes. A cell that normalizes
 * paths would otherwise act for another tenant than the one the router routed by.
 */
export const UNSAFE_PATH_PATTERN = '(^|/)[.][.]?(/|$)|%2[eEfF]|%5[cC]|\\\\';

/**
 * Map files the agent fills at runtime (prepare / add / commit). Route maps name backend slots
 * directly, so a request costs one lookup per step: `exact` (key → slot), `prefix` (prefix →
 * slot), `buckets` (bucket ranges as IPv4 networks → slot, see `bucketNetworks`), `cells`
 * (slot → cell: the agent's slot registry and the `x-cell` debug header), `meta` (version) and
 * `hosts` (slot → the cell endpoint's host name: TLS SNI and certificate name for `https://` cells)
 * and `away` (redirect backend → the URL of the region it sends requests to, `router.reach`),
 * and `homes` (home-region key prefix → its table's first bucket; only with `homeTables`).
 */
export const MAP_FILES = {
  exact: 'exact.map',
  prefix: 'prefix.map',
  buckets: 'buckets.map',
  cells: 'cells.map',
  meta: 'meta.map',
  hosts: 'hosts.map',
  away: 'away.map',
  homes: 'homes.map',
} as const;

export const slotName = (slot: number) => `slot${slot}`;

/**
 * The backend that answers requests for cells of one other region `307` to that region's URL
 * (`router.reach` home-and-failover): the agent routes a cell it does not link to one of these and
 * names its URL in the `away` map. MAX_ELSEWHERE_REGIONS of them, whatever the fleet.
 */
export const awayName = (index: number) => `away${index}`;

/** The servers of a slot: one per zonal address of the cell's endpoint (`z0` is tried first). */
export const zoneServer = (zone: number) => `z${zone}`;

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
    case 'header':
      return `req.fhdr(${source.name})`;
    // path "/a/b/c": field 1 is empty, segment 1 is field 2.
    case 'path':
      return `path,field(${source.segment + 1},/)`;
    case 'host':
      return `req.fhdr(host),field(1,:),field(${source.label},.)`;
    // Read only once the token was verified (jwtRules): a forged token never reaches this.
    case 'jwt':
      return `http_auth_bearer,jwt_payload_query('$.${source.claim}')`;
  }
}

/** Where the public keys of a verified-token key source are, one file each (`routerStateFiles` writes them). */
export function jwtKeyFile(stateDir: string, index: number): string {
  return `${stateDir}/jwt-key-${index + 1}.pem`;
}

/**
 * The rules that verify a tenant token before anything reads its claim: a missing bearer token, a
 * token with another algorithm (`none` included), one no key of the fleet signed, and one without an
 * `exp` in the future each get 401 and go no further (no tenant, no cell counts them). HAProxy's
 * `jwt_verify` checks the signature only; the algorithm is checked first, since it takes it from the
 * token's own header.
 */
function jwtRules(source: Extract<PartitionKeySource, { source: 'jwt' }>, stateDir: string): string[] {
  const unauthorized = (error: string, message: string, condition: string) =>
    `  ${jsonError(401, error, message)} hdr www-authenticate 'Bearer realm="cells"' ${condition}`;
  const signed = source.publicKeys
    .map((_, i) => `{ var(txn.jwt_alg) -m str ${source.algorithm} } { http_auth_bearer,jwt_verify(txn.jwt_alg,${jwtKeyFile(stateDir, i)}) -m int 1 }`)
    .join(' or ');
  return [
    unauthorized('missing token', 'send Authorization: Bearer <token>', 'if !{ http_auth_bearer -m found }'),
    "  http-request set-var(txn.jwt_alg) http_auth_bearer,jwt_header_query('$.alg')",
    unauthorized('invalid token', `the token is not signed with ${source.algorithm} by a key this router trusts`, `unless ${signed}`),
    '  http-request set-var(txn.now) date',
    unauthorized(
      'expired token',
      'the token has no exp in the future; get a new one',
      `if !{ http_auth_bearer,jwt_payload_query('$.exp','int') -m found } or { http_auth_bearer,jwt_payload_query('$.exp','int'),sub(txn.now) -m int le 0 }`,
    ),
  ];
}

/** Where a client puts the partition key, per the fleet's key source: the bad-key 400s say it. */
export function keyPlace(source: PartitionKeySource): string {
  switch (source.source) {
    case 'header':
      return `in the ${source.name} header`;
    case 'path':
      return source.segment === 1
        ? 'as the first path segment (/KEY/...)'
        : `as path segment ${source.segment} (counting from 1 after the leading /)`;
    case 'host':
      return source.label === 1
        ? 'as the first label of the Host header (KEY.example.com)'
        : `as label ${source.label} of the Host header (counting from 1 at the left)`;
    case 'jwt':
      return `as the ${source.claim} claim of the bearer token`;
  }
}

/**
 * The bad-key 400 bodies: what is wrong and where the key goes. Static strings rendered once, so a
 * good request pays nothing for them.
 */
export function badKeyMessages(source: PartitionKeySource): { readonly missing: string; readonly invalid: string } {
  const place = keyPlace(source);
  return {
    missing: `missing partition key: send it ${place}`,
    invalid: `invalid partition key: send one key ${place}, 1 to 128 characters from A-Z a-z 0-9 . _ : @ -, starting with a letter or digit`,
  };
}

function jsonError(status: number, error: string, message?: string): string {
  // The body sits between single quotes, which HAProxy does not escape; none of these strings has one.
  const body = JSON.stringify(message === undefined ? { error } : { error, message });
  if (body.includes("'")) throw new Error(`router error body ${body} has a single quote, which the HAProxy configuration cannot carry`);
  return `http-request return status ${status} content-type application/json string '${body}'`;
}

/**
 * A cell's failures are logged one in this many while they come fast: while the cell has no server
 * up, or more requests wait in its queue than it serves at once (most of them will get 503). Bad-key 400s are not logged (the metrics count them).
 */
export const LOG_SAMPLE_ONE_IN = 100;

/**
 * One JSON log line per logged request. No query string (it may carry personal data such as
 * `?email=`), no client-sent header values, and the partition key only as the first 8 bytes of its
 * SHA-256 (enough to group a tenant's failures, not to read the key); path-keyed fleets log no path,
 * since the key is in it.
 */
export function logFormat(source: PartitionKeySource): string {
  const fields = [
    '"time":"%tr"',
    '"client":"%ci"',
    '"status":%ST',
    '"backend":"%b"',
    '"server":"%s"',
    '"method":"%HM"',
    ...(source.source === 'path' ? [] : ['"path":"%{+E}HPO"']),
    // The key as captured at request time (request headers are gone when the line is written), hashed only for lines written.
    '"key_sha256":"%[capture.req.hdr(0),sha2(256),bytes(0,8),hex]"',
    '"timers_ms":"%TR/%Tw/%Tc/%Tr/%Ta"',
    '"termination":"%tsc"',
    '"conns":"%ac/%fc/%bc/%sc"',
    '"queues":"%sq/%bq"',
    '"bytes":%B',
  ];
  return `{${fields.join(',')}}`;
}

function quote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/**
 * The HAProxy configuration of one router task. The data plane does everything per request:
 * key extraction and validation (400 with a JSON body), the DESIGN.md bucket
 * (`sha2(256),bytes(0,4),hex,hex2i,and(B-1)`), exact → longest prefix → bucket lookups in maps the
 * agent swaps atomically at runtime, and one backend slot per cell with its own maxconn and a
 * bounded queue (503 + Retry-After when it times out). `retries 0` and no redispatch: a request
 * never goes to a second cell. The hot path has one regex, at most three map lookups and, with the
 * fairness caps, two variables (the cell's slot and the address's count in it), since every rule
 * costs throughput (`npm run bench:router`, docs/router.md "What each rule costs").
 *
 * At the edge: HTTP/1.1 only (`proto h1`: cleartext HTTP/2 would multiply requests per connection
 * past the `maxconn` arithmetic); the whole request, body included, must arrive within
 * `requestTimeoutMs` (408) and is buffered before a cell slot is taken, so a slow client holds a
 * router connection, never a cell slot; a body larger than the buffer, or chunked, must fill the
 * buffer in that time and then streams, each pause bounded by `clientTimeoutMs`, each address's and
 * tenant's share of a cell by the per-tenant caps; a body announced over `maxBodyBytes` gets 413; client-sent `x-cell`, `x-mapping-version`, `forwarded`, `x-forwarded-*` are
 * removed and the router sets `x-forwarded-for` (the client, from the PROXY header behind the NLB),
 * `x-forwarded-proto` and the partition-key header the cell's WAF rate rule keys on; a client
 * sending too many bad keys is throttled, then refused at connect.
 */
export function renderHaproxyConfig(o: HaproxyConfigOptions): string {
  if ((o.bucketCount & (o.bucketCount - 1)) !== 0 || o.bucketCount < 1 || o.bucketCount > 2 ** 20) {
    throw new Error(`bucketCount ${o.bucketCount} must be a power of two up to 1048576`);
  }
  if (!Number.isInteger(o.slots) || o.slots < 1 || o.slots > MAX_ROUTER_SLOTS) throw new Error(`slots ${o.slots} must be 1-${MAX_ROUTER_SLOTS}`);
  const zones = o.zones ?? 3;
  if (!Number.isInteger(zones) || zones < 1 || zones > 6)
    throw new Error(`zones ${zones} must be 1-6 (servers per cell backend, one per zonal address)`);
  const maxConn = o.maxConn ?? 4000;
  const maxBody = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBody) || maxBody < 0 || maxBody > MAX_BODY_BYTES_LIMIT)
    throw new Error(`maxBodyBytes ${maxBody} must be a whole number of bytes from 0 to ${MAX_BODY_BYTES_LIMIT}`);
  const badKeys = o.badKeysPer10s ?? 100;
  const perClient = o.maxConnPerClient ?? Math.max(10, Math.floor(maxConn / 20));
  const full = fullTask(maxConn, perClient);
  if (o.clientMaxConnPerCell !== undefined && o.tenantMaxConn === undefined)
    throw new Error('clientMaxConnPerCell needs tenantMaxConn: it is a part of the cell a tenant may take');
  const perCell = o.tenantMaxConn === undefined ? undefined : o.clientMaxConnPerCell;
  // The queue's priority classes run from -2047 to 2047 (HAProxy clamps the rest): a tenant's and an
  // address's counts together are scaled to fit.
  const classScale = perCell === undefined ? 1 : Math.ceil((o.tenantMaxConn! + perCell) / 2047);
  const perClientRate = o.requestsPerClientPer10s ?? 20_000;
  const keyCache = o.keyCacheEntries ?? KEY_CACHE_ENTRIES;
  if (!Number.isInteger(keyCache) || keyCache <= maxConn) {
    throw new Error(
      `keyCacheEntries ${keyCache} must be a whole number above maxConn (${maxConn}): every request in flight holds its tenant's entry, and a new tenant needs one no request holds`,
    );
  }
  const caFile = o.caFile ?? '@system-ca';
  if (/\s/.test(caFile)) throw new Error(`caFile ${caFile}: a path without spaces`);
  const map = (name: keyof typeof MAP_FILES) => `${o.stateDir}/${MAP_FILES[name]}`;
  // The key is read from its capture (below) wherever it is used: a pointer to a copy made once,
  // where reading the header again costs a search of the headers each time (about 500
  // instructions, up to five times per request for a new tenant), and a variable an allocation.
  const key = 'capture.req.hdr(0)';
  const badKey = badKeyMessages(o.partitionKey);
  const lines = [
    'global',
    `  maxconn ${maxConn + overflowConnections(maxConn) + RESERVED_CONNECTIONS}`,
    // The bucket count this configuration hashes keys into, for the agent (`show env`): it refuses a
    // document made for another count instead of sending most keys to other cells.
    `  setenv ${BUCKET_COUNT_ENV} ${o.bucketCount}`,
    // Home tables (the fleet's `homes`): the agent then fills the homes map and may apply a document
    // with several tables; a router without them keeps its last-known-good instead of misrouting.
    ...(o.homeTables ? [`  setenv ${HOME_TABLES_ENV} 1`] : []),
    // Where this router listens, for the agent: a document that names one of these as a cell's
    // endpoint would loop requests through the router, and is refused.
    `  setenv ${ROUTER_ADDRESSES_ENV} ${quote(routerAddresses(o).join(' '))}`,
    // A port already taken is an error at start, not shared (SO_REUSEPORT): a second router or local
    // fleet on the same port would otherwise take a share of the first one's connections.
    '  noreuseport',
    // A unix socket in local mode; `ipv4@host:port` in a task, where the agent is another container.
    o.adminSocket.startsWith('ipv4@')
      ? `  stats socket ${o.adminSocket} level admin`
      : `  stats socket ${o.adminSocket} mode 600 level admin expose-fd listeners`,
    '  stats timeout 30s',
    // Soft stop (SIGUSR1, the official image's STOPSIGNAL): listeners close, in-flight requests
    // finish, then this cuts whatever is left, before the container runtime's SIGKILL.
    `  hard-stop-after ${o.hardStopAfterMs ?? 25000}ms`,
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
    '  option dontlognull',
    // Log failures only (errors, timeouts, 5xx); per-request traffic is in the stats the agent exports.
    '  option dontlog-normal',
    '  timeout connect 2s',
    // A client that stops reading its response holds the cell's connection (a slot) only this long
    // once HAProxy's buffers toward it are full: the cell's response then stalls, and HAProxy closes
    // both sides. It does not cut a cell that is slow to answer (the client side waits for nothing
    // then; timeout server bounds that), nor an idle keep-alive connection (timeout http-keep-alive).
    `  timeout client ${o.clientTimeoutMs ?? CLIENT_TIMEOUT_MS}ms`,
    '  timeout server 30s',
    `  timeout http-request ${o.requestTimeoutMs ?? 5000}ms`,
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
      '  no log',
      '  maxconn 20',
      '  http-request use-service prometheus-exporter if { path /metrics }',
      '  stats enable',
      '  stats uri /stats',
      '',
    );
  }
  if (o.readyBind) {
    const version = `str(version),map(${map('meta')})`;
    const json = (ready: boolean, extra: string) => `lf-string '{"ready":${ready},${extra}"connections":%[fe_conn(router)],"limit":${maxConn}}'`;
    lines.push(
      'frontend ready',
      // The NLB sends the PROXY header on health-check connections too once the target group has
      // proxy protocol on (NLB User Guide, target groups, proxy protocol): without accept-proxy
      // the check gets 400 and no task ever turns healthy.
      `  bind ${o.readyBind.address}:${o.readyBind.port}${o.acceptProxy ? ' accept-proxy' : ''}`,
      '  maxconn 20',
      '  no log',
      `  http-request return status 503 content-type application/json ${json(false, '"reason":"no mapping in force",')} if !{ ${version} -m found }`,
      // Full, and the agent's permission to leave not expired (it found this task among those of its
      // group that may leave while half stays in).
      `  http-request set-var(txn.leave_until) str(${FULL_MAY_LEAVE_KEY}),map_str_int(${o.stateDir}/${READINESS_MAP},0)`,
      `  http-request return status 503 content-type application/json ${json(false, '"reason":"task full",')} if { fe_conn(router) gt ${full.shed} } { date,sub(txn.leave_until) lt 0 }`,
      `  http-request return status 200 content-type application/json ${json(true, `"version":%[${version}],`)}`,
      '',
    );
  }
  // Two key headers would make the key ambiguous.
  const repeated = o.partitionKey.source === 'header' ? ` or { req.fhdr_cnt(${o.partitionKey.name}) gt 1 }` : '';
  const refuse = (status: number, error: string, condition: string) => `  ${jsonError(status, error)} if ${condition}`;
  const buckets = map('buckets');
  const home = o.homeTables ? ',add(txn.home)' : '';
  lines.push(
    'frontend router',
    `  bind ${o.bind.address}:${o.bind.port} proto h1${o.acceptProxy ? ' accept-proxy' : ''}`,
    // Past maxConn only to answer: see overflowConnections.
    `  maxconn ${maxConn + overflowConnections(maxConn)}`,
    `  log-format ${quote(logFormat(o.partitionKey))}`,
    // The client's address (from the PROXY header behind the NLB) as the only x-forwarded-for (the
    // client's own is removed below): HAProxy inserts it after the rules, 650 instructions per
    // request less than `http-request set-header x-forwarded-for %[src]` (formatting the address
    // is most of what either costs).
    '  option forwardfor',
    // Per client address, once per connection. `tcp-request session`, not `connection`: session
    // rules run once the PROXY header is read, so `src` is the client, not the NLB.
    `  tcp-request session track-sc1 src table ${CLIENT_TABLE}`,
    ...(perCell !== undefined ? ['  tcp-request session set-var-fmt(sess.client) %[src]'] : []),
    `  tcp-request session reject if { sc1_conn_cur gt ${perClient} }`,
    // A task nearly full (many addresses, each within its cap): the heaviest addresses get no new
    // connections, so the slots that free up go to light clients (docs/router.md, "A full task").
    `  tcp-request session reject if { fe_conn gt ${full.shed} } { sc1_conn_cur gt ${full.heavy} }`,
    // How full the task was when this connection arrived (once per connection, not per request).
    '  tcp-request session set-var(sess.arrived_at) fe_conn',
    // A client over twice its bad-key budget is refused at connect while bad keys are most of what
    // its address sends: an address shared by many clients (a NAT) that mostly sends good keys keeps
    // its connections, and only its bad-key requests get 429 (in the bad-key backend).
    '  tcp-request session set-var(sess.bad_keys) sc1_gpc0_rate',
    `  tcp-request session reject if { var(sess.bad_keys) -m int gt ${badKeys * 2} } { sc1_http_req_rate,div(2),sub(sess.bad_keys) lt 0 }`,
    `  http-request return status 429 content-type application/json string '{"error":"too many requests from this client address"}' hdr retry-after 10 if { sc1_http_req_rate gt ${perClientRate} }`,
    // Full: a fast 503 and a closed connection, instead of a connect that times out, for a connection
    // that arrived past maxConn (in the overflow), and for a heavy address's requests once shedding starts
    // (its connections close one by one). Connections that were open before keep being served. The
    // router's own answer: a lane client tries its shard's next lane.
    `  http-request return status 503 content-type application/json string '{"error":"router task full; retry"}' hdr retry-after 1 hdr ${ROUTER_ERROR_HEADER} full hdr connection close if { var(sess.arrived_at) -m int gt ${full.answer} } or { fe_conn gt ${full.shed} } { sc1_conn_cur gt ${full.heavy} }`,
    // A verified identity: the token checked before anything counts or routes by its claim.
    ...(o.partitionKey.source === 'jwt' ? jwtRules(o.partitionKey, o.stateDir) : []),
    // A body announced over the limit: 413 from the headers alone, before any of it is read.
    refuse(413, `request body over ${maxBody} bytes`, `{ req.hdr_val(content-length) gt ${maxBody} }`),
    // The body is read into the router's buffer before the request is routed, until it is whole or
    // the buffer is full, within the request timeout (else 408): a slow body holds this connection,
    // never one of a cell's slots. What does not fit then streams (docs/router.md, "Request bodies").
    // A chunked body announces no length: the router does not count it (the cell's own limit
    // applies); checking what the buffer holds cost every request 449 instructions for little.
    `  http-request wait-for-body time ${o.requestTimeoutMs ?? 5000}ms`,
    ...(o.partitionKey.source === 'path'
      ? [
          refuse(
            400,
            'dot segments and encoded separators are not allowed in the path',
            `{ path -m reg ${UNSAFE_PATH_PATTERN.replace(/\\/g, '\\\\')} }`,
          ),
        ]
      : []),
    // The key every rule below reads (`capture.req.hdr(0)`) and the log line hashes: a copy of at
    // most KEY_CAPTURE_LEN bytes. A header key is captured while the headers are parsed (`capture
    // request header`: the last occurrence, and a repeated key header is refused anyway), about 700
    // instructions per request less than the `http-request capture` action, which the path and host
    // keys need.
    o.partitionKey.source === 'header'
      ? `  capture request header ${o.partitionKey.name} len ${KEY_CAPTURE_LEN}`
      : `  http-request capture ${keyFetch(o.partitionKey)} len ${KEY_CAPTURE_LEN}`,
    // x-forwarded-for is added after the rules (option forwardfor), x-forwarded-proto set below.
    `  http-request del-header ${SPOOFABLE_HEADER_PATTERN} -m reg`,
    // Behind a TLS listener the NLB connects from port 443 of the listener (the PROXY header's
    // destination). Added, not set: the del-header above removed any the client sent, and
    // set-header would search the headers for it again (about 200 instructions per request). One
    // rule choosing the value costs less than two with fixed values and opposite conditions.
    '  http-request add-header x-forwarded-proto %[dst_port,sub(443),bool,iif(http,https)]',
    ...(o.partitionKey.source === 'header' ? [] : [`  http-request set-header ${ROUTED_KEY_HEADER} %[${key}]`]),
    // The tenant's bucket, kept in its entry of the keys table (gpt0 = bucket + 1): the bucket depends
    // only on the key and the bucket count, never on the mapping, so nothing ever invalidates it. A
    // key seen before costs a table lookup; a new one the key check and SHA-256, once. Keys are held
    // up to 129 bytes: a valid key has at most 128, so a longer (invalid) key never shares the entry
    // of a valid one, and an entry's bucket is set only after its whole key passed the check.
    `  http-request track-sc0 ${key} table ${KEY_TABLE}`,
    `  http-request sc-set-gpt0(0) ${key},${bucketExpression(o.bucketCount)},add(1) if { sc0_get_gpt0 eq 0 } { ${key} -m reg ${KEY_PATTERN.source} }`,
    // A valid key that got no entry: the table was full and HAProxy found no entry to drop among the
    // few it looks at (the oldest, held by requests in flight: a client spraying keys holds them).
    // Its bucket is computed here instead, so it is routed like any other; it is not counted against
    // its tenant's concurrency (no entry to count in), and never told "no mapping loaded".
    `  http-request set-var(txn.bucket) ${key},${bucketExpression(o.bucketCount)} if !{ sc0_get_gpt0 -m found } { ${key} -m reg ${KEY_PATTERN.source} }`,
    // The cell's backend slot, looked up once: exact, then longest prefix, then the bucket; each map
    // names the slot. The bucket is an integer below 2^20, which HAProxy casts to the IPv4 address
    // with that value, so bucket ranges are stored as a few networks and found by one longest-prefix
    // tree lookup. A valid key has its bucket in its entry (set above), or, without an entry, in
    // txn.bucket. (Another lookup, such as a freeze list, goes here: a map or ACL file the agent
    // fills like these.)
    `  http-request set-var(txn.slot) ${key},map_str(${map('exact')})`,
    `  http-request set-var(txn.slot) ${key},map_beg(${map('prefix')}) if !{ var(txn.slot) -m found }`,
    // With home tables, the key's table (its home-region prefix; none: table 0) moves the hash bucket
    // into that table's part of the bucket space: one prefix lookup, for keys no override routed.
    ...(o.homeTables ? [`  http-request set-var(txn.home) ${key},map_beg_int(${map('homes')},0) if !{ var(txn.slot) -m found }`] : []),
    `  http-request set-var(txn.slot) var(txn.bucket)${home},map_ip(${buckets}) if !{ var(txn.slot) -m found } { var(txn.bucket) -m found }`,
    `  http-request set-var(txn.slot) sc0_get_gpt0,sub(1)${home},map_ip(${buckets}) if !{ var(txn.slot) -m found }`,
    // Fairness inside a cell (docs/router.md, "Fairness"). First, what one client address holds in
    // this cell, whichever keys it sends: its address and the cell's slot, tracked together (the
    // entry's reference count, nothing stored), checked before the tenant's cap so that requests past
    // it never count against what the tenant's other clients may use. One address can then neither
    // spend a tenant's share with its key nor take the cell by rotating keys.
    ...(perCell === undefined
      ? []
      : [
          // Valid keys only (a bucket in the entry, or computed without one): a bad key goes to its 400,
          // never counts against the address's part of a cell.
          `  http-request track-sc2 var(sess.client),concat(@,txn.slot) table ${CLIENT_CELL_TABLE} if { var(txn.slot) -m found } { sc0_get_gpt0 gt 0 } or { var(txn.bucket) -m found }`,
          '  http-request set-var(txn.held) sc2_trackers',
          `  http-request return status 429 content-type application/json string '{"error":"too many concurrent requests to this cell from this client address"}' hdr retry-after 1 if { var(txn.held) -m int gt ${perCell} }`,
        ]),
    // Then the tenant: sc0_trackers is the number of requests tracking the tenant's entry now, this
    // one included (the entry's reference count, nothing stored); above the tenant's share of its
    // cell's slots the request is answered at once instead of taking a slot from its neighbours.
    ...(o.tenantMaxConn === undefined
      ? []
      : [
          `  http-request return status 429 content-type application/json string '{"error":"too many concurrent requests for this tenant"}' hdr retry-after 1 if { sc0_trackers gt ${o.tenantMaxConn} }`,
        ]),
    // Last, max-min fairness in a saturated cell: a request that has to wait for a slot waits in the
    // cell's queue in order of how much its tenant and its address already hold there (the queue's
    // priority class, lower first; FIFO within a class). Each slot that frees goes to the waiting
    // request whose tenant and address hold the least, so a tenant within its fair share is served
    // next whatever the others send, and the share adapts to how many tenants are active. The rest
    // wait at most queueTimeoutMs (a bounded queue), then 503. A key without a keys entry (a full
    // table), or an address without a client_cells one, counts as holding the most (the first rule,
    // which the second overrides when both counts exist). HAProxy clamps classes to ±2047, so large
    // cells' counts are scaled down (classScale).
    ...(perCell === undefined
      ? []
      : [
          `  http-request set-priority-class int(${Math.ceil((o.tenantMaxConn! + perCell) / classScale)})`,
          `  http-request set-priority-class sc0_trackers,add(txn.held)${classScale > 1 ? `,div(${classScale})` : ''}`,
        ]),
    // A key with a bucket passed the check; any other one is checked (a missing key fails the regex:
    // no sample), and which 400 to answer is worked out only on that path, in the bad-key backend.
    `  use_backend ${BAD_KEY_BACKEND} if !{ sc0_get_gpt0 gt 0 } !{ ${key} -m reg ${KEY_PATTERN.source} }${repeated}`,
    `  use_backend %[var(txn.slot)] if { var(txn.slot) -m found }`,
    // Nothing matched (no mapping loaded yet): use_backend with an empty name goes to the default.
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
    `backend ${KEY_TABLE}`,
    `  stick-table type string len 129 size ${keyCache} expire 30m store gpt0,http_req_rate(${TENANT_RATE_PERIOD_SECONDS}s)`,
    ...(perCell !== undefined
      ? [
          '',
          `backend ${CLIENT_CELL_TABLE}`,
          // An IPv6 address (up to 45) and a slot name, and their separator.
          `  stick-table type string len 64 size ${o.clientTableEntries ?? CLIENT_TABLE_ENTRIES} expire 1m`,
        ]
      : []),
    '',
    `backend ${CLIENT_TABLE}`,
    // gpc0: the client's bad-key requests (counted in the bad-key backend).
    // ipv6: an IPv6 client has an entry too (a `type ip` table tracks none, so IPv6 clients had no
    // per-client limit); an IPv4 address is kept as its IPv4-mapped form (`::ffff:198.51.100.7`).
    `  stick-table type ipv6 size ${o.clientTableEntries ?? CLIENT_TABLE_ENTRIES} expire 60s store conn_cur,http_req_rate(10s),gpc0,gpc0_rate(10s)`,
    '',
    `backend ${BAD_KEY_BACKEND}`,
    // Per client address: bad-key requests over the last 10 s. Over the budget: 429 and close.
    '  http-request sc-inc-gpc0(1)',
    `  http-request return status 429 content-type application/json string '{"error":"too many requests with a missing or invalid partition key"}' hdr retry-after 10 hdr connection close if { sc1_gpc0_rate gt ${badKeys} }`,
    `  ${jsonError(400, 'missing partition key', badKey.missing)} if !{ ${key} -m found } or { ${key} -m len 0 }`,
    `  ${jsonError(400, 'invalid partition key', badKey.invalid)}`,
    '',
    `backend ${NO_MAPPING_BACKEND}`,
    // Never true; keeps the cells, version and hosts maps loaded so the agent can update them either way.
    `  http-request set-var(txn.unused) str(version),map(${map('meta')},none),map(${map('cells')}),map(${map('hosts')}) if FALSE`,
    // Marked as the router's own: this task has no mapping, another lane's may (docs/lanes.md, retries).
    `  ${jsonError(503, 'no mapping loaded')} hdr retry-after 5 hdr ${ROUTER_ERROR_HEADER} no-mapping`,
  );
  lines.push(
    '',
    // Keys a move is copying (contract 3): the agent routes them here through the maps.
    `backend ${FROZEN_BACKEND}`,
    `  http-request return status 503 content-type application/json hdr retry-after ${FROZEN_RETRY_AFTER_SECONDS} hdr cache-control no-store string '{"error":"frozen","message":"this tenant is moving to another cell; retry in a second","retryAfterSeconds":${FROZEN_RETRY_AFTER_SECONDS}}'`,
  );
  // Cells this router does not link (router.reach): sent to their own region, method and body kept
  // (307). The request passed this router's checks and caps first, like any other.
  for (let i = 0; i < MAX_ELSEWHERE_REGIONS; i++) {
    lines.push(
      '',
      `backend ${awayName(i)}`,
      `  ${jsonError(503, 'cell not reachable from this region')} hdr retry-after 5 if !{ be_name,map(${map('away')}) -m found }`,
      `  http-request redirect location %[be_name,map(${map('away')})]%[pathq] code 307`,
      '  http-after-response set-header cache-control no-store',
    );
  }
  lines.push('');
  const check = `option httpchk GET ${o.healthCheckPath}`;
  const perZone = Math.max(1, Math.ceil(o.cellMaxConn / zones));
  for (let slot = 0; slot < o.slots; slot++) {
    lines.push(
      `backend ${slotName(slot)}`,
      // One server per zone, weighted by the zones document (0: drained, 100: its full share; the
      // agent sets them at runtime, which roundrobin allows): new requests spread over the zones by
      // weight, and a full server's go to the next.
      '  balance roundrobin',
      `  ${check}`,
      '  http-check expect status 200-399',
      `  errorfile 503 ${o.stateDir}/503.http`,
      // A down or saturated cell's 503s come fast: log a sample (see LOG_SAMPLE_ONE_IN).
      `  http-request set-log-level silent if { nbsrv eq 0 } { rand(${LOG_SAMPLE_ONE_IN}) gt 0 } or { queue gt ${o.cellMaxConn} } { rand(${LOG_SAMPLE_ONE_IN}) gt 0 }`,
      // TLS settings every server can switch on at runtime (`set server … ssl on`) when its cell is
      // `https://`: the certificate must chain to `caFile` and name the endpoint's host (the SNI,
      // from the hosts map; HAProxy verifies the certificate against the SNI it sent).
      `  default-server ssl verify required ca-file ${caFile} sni be_name,map(${map('hosts')}) check inter 1s fall 2 rise 1 maxconn ${perZone} weight 100`,
      // Unassigned servers stay in maintenance; the agent sets the addresses and enables them.
      ...Array.from({ length: zones }, (_, z) => `  server ${zoneServer(z)} 127.0.0.1:1 disabled no-ssl`),
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
  // The router's own answer, not the cell's: a lane client may try its shard's next lane once (docs/lanes.md).
  `${ROUTER_ERROR_HEADER}: cell-unavailable`,
  `content-length: ${Buffer.byteLength(ERROR_503_BODY)}`,
  '',
  ERROR_503_BODY,
].join('\r\n');
