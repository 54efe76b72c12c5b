import { createHash } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { writeFileAtomic } from '../../domain/files';
import { MappingDocument, parseMapping, sizeProblem } from '../../domain/mapping';
import { Applied, mapFileChunks, MappingApplier, UnappliableDocumentError } from './apply';
import { BUCKET_COUNT_ENV, MAP_FILES, ROUTER_ADDRESSES_ENV, SERVER_STATE_FILE, slotName } from './haproxy-config';
import { RuntimeApi } from './runtime-api';
import { MappingSource } from './sources';
import { readTenantRates, tenantMetricLines } from './tenant-rates';
import { ZoneWeightsFollower } from './zones';

export interface AgentOptions {
  readonly api: RuntimeApi;
  readonly source: MappingSource;
  readonly applier: MappingApplier;
  /** Where the last-known-good document (and its map files) are kept across restarts. */
  readonly stateDir: string;
  /** Structured log lines (JSON) and CloudWatch EMF metric lines go here (stdout in production). */
  readonly emit: (line: string) => void;
  /** Router group, a metric dimension. */
  readonly group: string;
  /**
   * Also emit each cell's requests and 5xx by `Cell` alone, across groups: with lanes a region has
   * up to 32 groups, more than one alarm's math may sum (10 metrics), so the routers' per-cell alarms
   * read these (and the dashboards, QueueTime too). Off otherwise: three more custom metrics per cell and region.
   * @default false
   */
  readonly metricsAcrossGroups?: boolean;
  /**
   * The router frontend's serving limit (`maxConn`), what ConnectionUsePercent is measured against:
   * the frontend's own `maxconn` is higher by the overflow it only answers 503 in (overflowConnections).
   * @default the frontend's `maxconn` as HAProxy reports it
   */
  readonly connectionLimit?: number;
  readonly now?: () => number;
  /** A document rejected as unappliable (an endpoint not resolving yet) is tried again after this long. @default 30000 */
  readonly retryUnappliableMs?: number;
  /** How often the endpoints of the cells in force are resolved again (zonal addresses kept current). @default 30000 */
  readonly refreshAddressesMs?: number;
  /** What to tell the operator when a cell endpoint cannot be used here. @default UNAPPLIABLE_HINT */
  readonly unappliableHint?: string;
  /**
   * Told the version HAProxy has in force after every tick (S3ServedReporter: `served/<group>/<task>.json`,
   * what a move waits on). Not awaited by the tick: a slow write never delays routing.
   */
  readonly served?: { update(version: number | undefined, zonesVersion?: number): Promise<void> };
  /** The region's zones document, followed on every tick after the mapping (its weights on the zonal servers). @default - no zone weights */
  readonly zones?: ZoneWeightsFollower;
}

/** The hint for a document naming an endpoint that does not resolve, on a router task in AWS. */
export const UNAPPLIABLE_HINT =
  "each cell's endpoint record comes with its cell stack: check that the cell is deployed and that the mapping names the right endpoint (`cellctl mapping show`); the router keeps its last-known-good and tries the document again";

export const LKG_FILE = 'last-known-good.json';

/**
 * The mapping agent: polls its source, validates every candidate with the shared mapping code,
 * rejects invalid or older documents and documents that cannot be applied here (an endpoint that
 * does not resolve, too few slots; checked before anything changes), keeping the last-known-good,
 * counting and logging why; applies valid ones to HAProxy at runtime and persists them. It re-applies
 * the last-known-good when HAProxy restarts. Ready means a mapping is in force in HAProxy: a
 * rejected document, a failed apply or an agent restart never clears it (HAProxy serves the same
 * readiness to the load balancer itself, see `readyBind`).
 */
export class MappingAgent {
  private lkg?: MappingDocument;
  private appliedPid?: string;
  private lastSuccess?: number;
  private rejected = 0;
  private fetchErrors = 0;
  /** The source said there is no document (reported once until one appears). */
  private pointerMissing = false;
  private busy = false;
  /** Version HAProxy reported at the last tick (its meta map): what is in force. */
  private inForce?: number;
  /** The last unappliable document: its version (rejected once) and when to try it again. */
  private unappliable?: { version: number; retryAt: number };
  private nextRefresh = 0;
  /** The last-known-good could not be re-applied (an endpoint stopped resolving): not before then. */
  private reapplyAt = 0;
  /** Documents already reported as not newer (version and content hash), so each is logged once. */
  private readonly notNewer = new Set<string>();
  /** Last value of each cumulative counter, so metrics are per-interval deltas. */
  private readonly counters = new Map<string, number>();
  private reporting: Promise<void> = Promise.resolve();

  constructor(private readonly o: AgentOptions) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  private log(event: string, fields: Record<string, unknown> = {}): void {
    this.o.emit(
      JSON.stringify({
        level: event.startsWith('reject') || event.endsWith('error') || event === 'ignored' || event.endsWith('unappliable') ? 'warn' : 'info',
        event,
        group: this.o.group,
        ...fields,
      }),
    );
  }

  public get version(): number | undefined {
    return this.lkg?.version;
  }

  public get rejectedDocuments(): number {
    return this.rejected;
  }

  /** The version HAProxy has in force (its meta map, as of the last tick or apply); undefined when none. */
  public get versionInForce(): number | undefined {
    return this.inForce;
  }

  /**
   * The document in force freezes something: a move is in its freeze window and its flip comes
   * next, so the agent polls faster meanwhile (bin/router-agent.ts) to shorten the window.
   */
  public get freezing(): boolean {
    const f = this.lkg?.freeze;
    return !!f && ((f.exact?.length ?? 0) > 0 || (f.buckets?.length ?? 0) > 0);
  }

  /** The served-version report started by the last tick (resolves when written or failed). */
  public get lastReport(): Promise<void> {
    return this.reporting;
  }

  /** Ready = a mapping is in force in the running HAProxy (as of the last tick). */
  public get ready(): boolean {
    return this.inForce !== undefined;
  }

  /** Loads the persisted last-known-good (if any) so a restarted agent serves it at once. */
  public loadLastKnownGood(): void {
    this.o.zones?.loadLastKnownGood();
    const file = path.join(this.o.stateDir, LKG_FILE);
    if (!fs.existsSync(file)) return;
    const parsed = parseMapping(fs.readFileSync(file, 'utf8'));
    if (parsed.ok) {
      this.lkg = parsed.document;
      this.log('lkg-loaded', { version: parsed.document.version });
    } else {
      this.log('lkg-invalid', { problem: parsed.problems[0] });
    }
  }

  /** `text`: the document as read (written as it is; stringifying it again would hold another copy). */
  private async persist(doc: MappingDocument, { contents }: Applied, text?: string): Promise<void> {
    writeFileAtomic(path.join(this.o.stateDir, LKG_FILE), text ?? `${JSON.stringify(doc)}\n`);
    writeFileAtomic(path.join(this.o.stateDir, SERVER_STATE_FILE), await this.o.api.send('show servers state'));
    // The map files too: a HAProxy started from this directory boots with these routes.
    for (const name of Object.keys(MAP_FILES) as (keyof typeof MAP_FILES)[]) {
      writeFileAtomic(path.join(this.o.stateDir, MAP_FILES[name]), mapFileChunks(contents[name]));
    }
  }

  private async apply(doc: MappingDocument, pid: string, text?: string): Promise<void> {
    const applied = await this.o.applier.apply(doc);
    const slots = applied.slots;
    await this.persist(doc, applied, text);
    this.lkg = doc;
    this.appliedPid = pid;
    this.inForce = doc.version;
    this.unappliable = undefined;
    this.lastSuccess = this.now();
    this.nextRefresh = this.now() + (this.o.refreshAddressesMs ?? 30_000);
    this.log('applied', { version: doc.version, cells: Object.fromEntries([...slots].map(([c, s]) => [c, slotName(s)])) });
  }

  /** Applies a new document; one that cannot be applied here is rejected (once per version) and tried again later. */
  private async applyCandidate(doc: MappingDocument, pid: string, text: string): Promise<void> {
    try {
      await this.apply(doc, pid, text);
    } catch (error) {
      if (!(error instanceof UnappliableDocumentError)) throw error;
      if (this.unappliable?.version !== doc.version) {
        this.reject({
          version: doc.version,
          problems: [{ path: '$.cells', message: error.message }],
          hint: this.hint(),
          retryInSeconds: this.retryMs() / 1000,
        });
      }
      this.unappliable = { version: doc.version, retryAt: this.now() + this.retryMs() };
      this.lastSuccess = this.now();
    }
  }

  private retryMs(): number {
    return this.o.retryUnappliableMs ?? 30_000;
  }

  private hint(): string {
    return this.o.unappliableHint ?? UNAPPLIABLE_HINT;
  }

  /**
   * A valid document whose version is not above the one in force: never applied. Reported once per
   * distinct document (a poll that reads it again, or a source without change detection, says
   * nothing new); the same document as the one in force, read again, is not news at all.
   */
  private notNewerThanInForce(doc: MappingDocument, text: string, current: number): void {
    const id = `${doc.version}:${createHash('sha256').update(text).digest('hex')}`;
    if (doc.version === current && JSON.stringify(doc) === JSON.stringify(this.lkg)) return;
    if (this.notNewer.has(id)) return;
    if (this.notNewer.size > 100) this.notNewer.clear();
    this.notNewer.add(id);
    const fix = 'raise `version` above the version in force to apply it (the `cellctl mapping` commands do)';
    if (doc.version < current) {
      this.reject({
        version: doc.version,
        problems: [{ path: '$.version', message: `${doc.version} is older than the version in force ${current}; ${fix}` }],
      });
    } else {
      this.log('ignored', {
        source: this.o.source.description,
        version: doc.version,
        keptVersion: current,
        reason: `the document changed but its version ${doc.version} is the version in force; ${fix}`,
      });
    }
  }

  private reject(fields: Record<string, unknown>): void {
    this.rejected += 1;
    this.log('rejected', { source: this.o.source.description, keptVersion: this.lkg?.version, ...fields });
  }

  /** One poll: re-apply after a HAProxy restart, then fetch, validate and apply anything newer. */
  public async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      let pid: string | undefined;
      let bucketCount: number | undefined;
      let routerEndpoints: string[] = [];
      try {
        pid = (await this.o.api.info()).Pid;
        this.inForce = await this.o.applier.currentVersion();
        bucketCount = Number(await this.o.api.env(BUCKET_COUNT_ENV)) || undefined;
        // A configuration from before the variable existed lists none: nothing to compare.
        routerEndpoints = ((await this.o.api.env(ROUTER_ADDRESSES_ENV)) ?? '').split(' ').filter(Boolean);
      } catch (error) {
        this.appliedPid = undefined;
        this.inForce = undefined;
        this.log('haproxy-error', { error: (error as Error).message });
      }
      if (this.unappliable && this.now() >= this.unappliable.retryAt) {
        this.unappliable.retryAt = Infinity;
        this.o.source.reset(); // read the document again: its endpoint may resolve by now
      }
      if (pid !== undefined && this.lkg && pid === this.appliedPid && this.now() >= this.nextRefresh) {
        this.nextRefresh = this.now() + (this.o.refreshAddressesMs ?? 30_000);
        const { moved, reach } = await this.o.applier.refreshAddresses(this.lkg);
        if (moved.length > 0) {
          writeFileAtomic(path.join(this.o.stateDir, SERVER_STATE_FILE), await this.o.api.send('show servers state'));
          this.log('addresses-changed', { cells: moved });
        }
        // Another region's cell whose link here appeared or went (router.reach): the document in
        // force again, so it is served here, or sent to its region, from now on.
        if (reach.length > 0) {
          this.log('reach-changed', { cells: reach, version: this.lkg.version });
          try {
            await this.apply(this.lkg, pid);
          } catch (error) {
            this.log('apply-error', { error: (error as Error).message, keptVersion: this.lkg.version });
          }
        }
      }
      if (pid !== undefined && this.lkg && pid !== this.appliedPid && this.now() >= this.reapplyAt) {
        // A new HAProxy process, or this agent just started (restarted beside a running HAProxy) or
        // recovering from a failed apply: either way HAProxy gets the last-known-good again.
        const retrying = this.reapplyAt > 0;
        if (!retrying) this.log(this.appliedPid === undefined ? 'lkg-reapplied' : 'haproxy-restarted', { pid, version: this.lkg.version });
        try {
          await this.apply(this.lkg, pid);
          this.reapplyAt = 0;
        } catch (error) {
          if (!(error instanceof UnappliableDocumentError)) throw error;
          // HAProxy booted from the persisted maps and server state and serves them; the endpoint
          // is tried again later, and reported once (not at every poll).
          if (!retrying)
            this.log('lkg-unappliable', {
              version: this.lkg.version,
              problem: error.message,
              hint: this.hint(),
              retryInSeconds: this.retryMs() / 1000,
            });
          this.reapplyAt = this.now() + this.retryMs();
        }
      }
      let result;
      try {
        result = await this.o.source.fetch();
      } catch (error) {
        this.fetchErrors += 1;
        this.log('fetch-error', { source: this.o.source.description, error: `${(error as Error).name}: ${(error as Error).message}` });
        return;
      }
      if (!result.changed && result.missing) {
        // Nothing published for this group yet (or the pointer was removed): not a fetch error. Said
        // once; the last-known-good stays in force and SecondsSinceRefresh keeps growing.
        if (!this.pointerMissing)
          this.log('no-document', {
            source: this.o.source.description,
            keptVersion: this.lkg?.version,
            hint: 'nothing is published for this router group yet: cellctl mapping publish',
          });
        this.pointerMissing = true;
        return;
      }
      this.pointerMissing = false;
      if (!result.changed) {
        this.lastSuccess = this.now();
        return;
      }
      if ('tooLarge' in result) {
        this.reject({ problems: [sizeProblem(result.tooLarge, { maxEntries: Infinity, maxBytes: result.maxBytes, maxCost: Infinity })] });
        return;
      }
      const parsed =
        pid === undefined || bucketCount !== undefined
          ? parseMapping(result.text, { bucketCount, routerEndpoints })
          : {
              ok: false as const,
              problems: [
                {
                  path: '$.bucketCount',
                  message: `HAProxy's configuration does not say how many buckets it hashes keys into (${BUCKET_COUNT_ENV}); run the configuration of \`cellctl router config\``,
                },
              ],
            };
      const current = this.lkg?.version;
      if (!parsed.ok) {
        this.reject({ problems: parsed.problems.slice(0, 5) });
      } else if (current !== undefined && parsed.document.version <= current) {
        this.lastSuccess = this.now();
        this.notNewerThanInForce(parsed.document, result.text, current);
      } else if (pid !== undefined) {
        await this.applyCandidate(parsed.document, pid, result.text);
      } else {
        // HAProxy is not reachable (not started yet): read the document again at the next poll.
        this.o.source.reset();
      }
    } catch (error) {
      // HAProxy refused something mid-apply: the next tick re-applies the last-known-good and then
      // reads the document again. Readiness stays what HAProxy says (its maps still route).
      this.log('apply-error', { error: (error as Error).message, keptVersion: this.lkg?.version });
      this.appliedPid = undefined;
      this.o.source.reset();
    } finally {
      if (this.o.zones) {
        try {
          await this.o.zones.tick(this.lkg);
        } catch (error) {
          this.log('zones-apply-error', { error: (error as Error).message, keptVersion: this.o.zones.version });
        }
      }
      this.busy = false;
      if (this.o.served) this.reporting = this.o.served.update(this.inForce, this.o.zones?.version);
    }
  }

  /** Change of a cumulative counter since the last emission (a HAProxy restart resets counters). */
  private delta(name: string, now: number): number {
    const was = this.counters.get(name) ?? 0;
    this.counters.set(name, now);
    return now >= was ? now - was : now;
  }

  /**
   * CloudWatch embedded-metric-format lines: one for the router group (mapping version, seconds
   * since the last successful refresh, rejected documents and fetch errors, requests and responses
   * at the frontend, where 400s for bad keys are), then one per cell. Counts are per-interval deltas.
   */
  public async metrics(): Promise<string[]> {
    const timestamp = this.now();
    let slots = new Map<string, number>();
    let stats: Record<string, string>[] = [];
    let info: Record<string, string> = {};
    try {
      slots = await this.o.applier.currentSlots();
      stats = await this.o.api.stats();
      info = await this.o.api.info();
    } catch {
      // HAProxy unreachable: the router line still says how stale the mapping is.
    }
    const frontend = stats.find((r) => r.pxname === 'router' && r.svname === 'FRONTEND');
    const limit = this.o.connectionLimit ?? Number(frontend?.slim || 0);
    const router = {
      _aws: {
        Timestamp: timestamp,
        CloudWatchMetrics: [
          {
            Namespace: 'CellRouter',
            Dimensions: [['RouterGroup']],
            Metrics: [
              { Name: 'MappingVersion', Unit: 'None' },
              { Name: 'SecondsSinceRefresh', Unit: 'Seconds' },
              { Name: 'RejectedDocuments', Unit: 'Count' },
              { Name: 'FetchErrors', Unit: 'Count' },
              { Name: 'Requests', Unit: 'Count' },
              { Name: 'Responses4xx', Unit: 'Count' },
              { Name: 'Responses5xx', Unit: 'Count' },
              { Name: 'Connections', Unit: 'Count' },
              { Name: 'ConnectionLimit', Unit: 'Count' },
              { Name: 'ConnectionUsePercent', Unit: 'Percent' },
              { Name: 'DroppedLogs', Unit: 'Count' },
            ],
          },
        ],
      },
      RouterGroup: this.o.group,
      MappingVersion: this.lkg?.version ?? 0,
      SecondsSinceRefresh: this.lastSuccess === undefined ? -1 : Math.round((timestamp - this.lastSuccess) / 1000),
      RejectedDocuments: this.delta('rejected', this.rejected),
      FetchErrors: this.delta('fetchErrors', this.fetchErrors),
      Requests: this.delta('router:req', Number(frontend?.req_tot || 0)),
      Responses4xx: this.delta('router:4xx', Number(frontend?.hrsp_4xx || 0)),
      Responses5xx: this.delta('router:5xx', Number(frontend?.hrsp_5xx || 0)),
      // Current client connections of this task against its frontend limit (readiness turns false near it).
      Connections: Number(frontend?.scur || 0),
      ConnectionLimit: limit,
      ConnectionUsePercent: limit > 0 ? Math.round((1000 * Number(frontend?.scur || 0)) / limit) / 10 : 0,
      // Log lines HAProxy gave up writing: it never blocks on its log output, so a line is dropped
      // when stdout is full or another thread is writing to it. The counts above never drop.
      DroppedLogs: this.delta('droppedLogs', Number(info.DroppedLogs || 0)),
    };
    const lines = [JSON.stringify(router)];
    for (const [cell, slot] of slots) {
      const row = stats.find((r) => r.pxname === slotName(slot) && r.svname === 'BACKEND');
      if (!row) continue;
      lines.push(
        JSON.stringify({
          _aws: {
            Timestamp: timestamp,
            CloudWatchMetrics: [
              {
                Namespace: 'CellRouter',
                Dimensions: [['RouterGroup', 'Cell']],
                Metrics: [
                  { Name: 'Requests', Unit: 'Count' },
                  { Name: 'Responses4xx', Unit: 'Count' },
                  { Name: 'Responses5xx', Unit: 'Count' },
                  { Name: 'QueueTime', Unit: 'Milliseconds' },
                  { Name: 'ResponseTime', Unit: 'Milliseconds' },
                ],
              },
              ...(this.o.metricsAcrossGroups
                ? [
                    {
                      Namespace: 'CellRouter',
                      Dimensions: [['Cell']],
                      Metrics: [
                        { Name: 'Requests', Unit: 'Count' },
                        { Name: 'Responses5xx', Unit: 'Count' },
                        { Name: 'QueueTime', Unit: 'Milliseconds' },
                      ],
                    },
                  ]
                : []),
            ],
          },
          RouterGroup: this.o.group,
          Cell: cell,
          Requests: this.delta(`${cell}:req`, Number(row.req_tot || 0)),
          Responses4xx: this.delta(`${cell}:4xx`, Number(row.hrsp_4xx || 0)),
          Responses5xx: this.delta(`${cell}:5xx`, Number(row.hrsp_5xx || 0)),
          QueueTime: Number(row.qtime || 0),
          ResponseTime: Number(row.rtime || 0),
        }),
      );
    }
    return lines;
  }

  /**
   * EMF lines of the tenants this task routes, per cell of the mapping in force: active tenants and
   * the busiest tenants' rates, from HAProxy's keys table (`tenantMetricLines`). None while no
   * mapping is loaded or HAProxy does not answer.
   */
  public async tenantMetrics(top?: number): Promise<string[]> {
    if (!this.lkg) return [];
    try {
      return tenantMetricLines(await readTenantRates(this.o.api), this.lkg, this.now(), top);
    } catch {
      return [];
    }
  }

  /** The active cells of the mapping in force (none before one is): what a fleet-wide read asks. */
  public activeCells(): { id: string; endpoint: string }[] {
    return Object.entries(this.lkg?.cells ?? {})
      .filter(([, c]) => c.state === 'active')
      .map(([id, c]) => ({ id, endpoint: c.endpoint }));
  }

  /** `/ready`: 200 while a mapping is in force in HAProxy, 503 otherwise; `/healthz`: the process is alive. */
  public healthServer(): http.Server {
    return http.createServer((req, res) => {
      const ready = req.url === '/healthz' || this.ready;
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ready: this.ready, version: this.version ?? null, rejected: this.rejected }));
    });
  }
}

export interface AgentLoopOptions {
  /** Between two polls. */
  readonly pollMs: number;
  /** Between two polls while the mapping in force freezes something (a move's flip comes next). */
  readonly freezePollMs: number;
}

/**
 * Polls the agent until stopped: every `pollMs`, and every `freezePollMs` while a move's freeze is
 * in force, so the routers pick up its flip quickly and the subject's freeze window stays short (the
 * mover waits for every router to serve the flip). The faster polls cost a few more conditional GETs
 * of the group's pointer during a move's freeze only.
 */
export function runAgentLoop(agent: MappingAgent, o: AgentLoopOptions): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const loop = async () => {
    await agent.tick();
    if (!stopped) timer = setTimeout(() => void loop(), agent.freezing ? Math.min(o.freezePollMs, o.pollMs) : o.pollMs);
  };
  void loop();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
