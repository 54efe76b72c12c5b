import { lookup as dnsLookup } from 'dns/promises';
import { MappingDocument } from '../mapping';
import { bucketNetworks, MAP_FILES, slotName } from './haproxy-config';
import { bucketRoutes, exactRoutes, FROZEN_BACKEND } from './freeze';
import { RuntimeApi } from './runtime-api';

/** Map entries of a document, as HAProxy reads them (`key value` per line). */
export interface MapContents {
  readonly exact: readonly [string, string][];
  readonly prefix: readonly [string, string][];
  readonly buckets: readonly [string, string][];
  readonly cells: readonly [string, string][];
  readonly meta: readonly [string, string][];
}

/**
 * Expands a document into map entries; `slots` says which backend slot serves each cell. Route
 * maps name slots, not cells, so HAProxy needs no second lookup per request. Frozen keys and
 * buckets name the `frozen` backend (see freeze.ts).
 */
export function mapContents(doc: MappingDocument, slots: ReadonlyMap<string, number>): MapContents {
  const slotOf = (cell: string) => {
    const slot = slots.get(cell);
    if (slot === undefined) throw new Error(`cell ${cell} has no backend slot`);
    return slotName(slot);
  };
  return {
    exact: exactRoutes(doc).map(([key, cell]) => [key, cell === undefined ? FROZEN_BACKEND : slotOf(cell)]),
    prefix: Object.entries(doc.overrides.prefix).map(([prefix, cell]) => [prefix, slotOf(cell)]),
    buckets: bucketRoutes(doc).flatMap((range) => bucketNetworks(range.from, range.to).map((net): [string, string] => [net, range.cell === undefined ? FROZEN_BACKEND : slotOf(range.cell)])),
    cells: slotRegistry(slots),
    meta: [['version', String(doc.version)]],
  };
}

/** The cells map: slot → cell, the agent's record of which slot serves which cell. */
function slotRegistry(slots: ReadonlyMap<string, number>): [string, string][] {
  return [...slots.entries()].map(([cell, slot]) => [slotName(slot), cell]);
}

/** Renders map entries as a map file. */
export function mapFileText(entries: readonly [string, string][]): string {
  return entries.map(([k, v]) => `${k} ${v}\n`).join('');
}

/** A parsed cell endpoint. */
export function endpointAddress(endpoint: string): { host: string; port: number } {
  const url = new URL(endpoint);
  return { host: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
}

const PAYLOAD_BYTES = 12 * 1024; // under HAProxy's default 16 KiB buffer, with room for the command line

export interface ApplyOptions {
  readonly stateDir: string;
  /** Backend slots configured in HAProxy. */
  readonly slots: number;
  /** Resolves endpoint hosts to IP addresses. @default DNS */
  readonly resolve?: (host: string) => Promise<string>;
  /** How long to wait for a newly enabled cell's health check before committing. @default 3000 */
  readonly healthWaitMs?: number;
}

/**
 * Drives a running HAProxy to `doc` without a reload: assigns backend slots to cells (keeping
 * existing ones), points new slots at their endpoints, then swaps every map atomically
 * (prepare → add in chunks → check the staged count → commit) and reads every map back to verify
 * what was committed. A new cell always gets a slot no committed route names, and a removed
 * cell's slot leaves service only after the routes moved away, so no request ever reaches a slot
 * pointed at the wrong cell. Returns the slot assignment now in effect.
 */
export class MappingApplier {
  constructor(private readonly api: RuntimeApi, private readonly options: ApplyOptions) {}

  private path(name: keyof typeof MAP_FILES): string {
    return `${this.options.stateDir}/${MAP_FILES[name]}`;
  }

  /** The slot assignment HAProxy currently has (from its cells map, slot → cell). */
  public async currentSlots(): Promise<Map<string, number>> {
    const entries = await this.api.showMap(this.path('cells'));
    return new Map([...entries].map(([slot, cell]) => [cell, Number(slot.replace(/^slot/, ''))]));
  }

  /** The mapping version HAProxy is serving, if any. */
  public async currentVersion(): Promise<number | undefined> {
    const version = (await this.api.showMap(this.path('meta'))).get('version');
    return version === undefined ? undefined : Number(version);
  }

  private async replaceMap(name: keyof typeof MAP_FILES, entries: readonly [string, string][]): Promise<void> {
    const map = this.path(name);
    const prepared = await this.api.send(`prepare map ${map}`);
    const version = /New version created: (\d+)/.exec(prepared)?.[1];
    if (!version) throw new Error(`HAProxy refused to prepare ${map}: ${prepared.trim()}`);
    let chunk = '';
    const flush = async () => {
      if (chunk) await this.api.expectOk(`add map @${version} ${map} <<\n${chunk}\n`);
      chunk = '';
    };
    for (const [key, value] of entries) {
      chunk += `${key} ${value}\n`;
      if (chunk.length >= PAYLOAD_BYTES) await flush();
    }
    await flush();
    // Committing a version that received fewer entries than sent would silently drop routes.
    const staged = await this.api.send(`show map @${version} ${map}`);
    const count = staged.split('\n').filter((l) => l.startsWith('0x')).length;
    if (count !== entries.length) throw new Error(`${map}: staged ${count} entries, expected ${entries.length}; not committed`);
    await this.api.expectOk(`commit map @${version} ${map}`);
  }

  private async verify(name: keyof typeof MAP_FILES, entries: readonly [string, string][]): Promise<void> {
    const live = await this.api.showMap(this.path(name));
    const wrong = entries.find(([k, v]) => live.get(k) !== v);
    if (live.size !== entries.length || wrong) {
      throw new Error(`${this.path(name)} does not hold what was committed (${live.size} entries, expected ${entries.length}${wrong ? `; ${wrong[0]} → ${live.get(wrong[0])}` : ''})`);
    }
  }

  private async waitUp(slot: number): Promise<boolean> {
    const deadline = Date.now() + (this.options.healthWaitMs ?? 3000);
    for (;;) {
      const row = (await this.api.stats()).find((r) => r.pxname === slotName(slot) && r.svname === 'cell');
      if (row?.status.startsWith('UP')) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  public async apply(doc: MappingDocument): Promise<Map<string, number>> {
    const resolve = this.options.resolve ?? (async (host: string) => (await dnsLookup(host)).address);
    const before = await this.currentSlots();
    const cells = Object.keys(doc.cells);
    const slots = new Map<string, number>();
    for (const cell of cells) if (before.has(cell)) slots.set(cell, before.get(cell)!);
    const used = new Set([...before.values()]);
    const fresh = cells.filter((c) => !slots.has(c));
    let next = 0;
    for (const cell of fresh) {
      while (used.has(next)) next++;
      if (next >= this.options.slots) {
        throw new Error(`the mapping needs ${cells.length} cells but this router has ${this.options.slots} backend slots (some still held by removed cells); raise router.slots in the fleet (or --slots of cellctl router local)`);
      }
      slots.set(cell, next);
      used.add(next);
    }
    // Point every slot at its cell's current endpoint (a changed endpoint moves in place), and take
    // slots out of maintenance: new cells, and every cell after a HAProxy restart.
    const stats = await this.api.stats();
    for (const cell of cells) {
      const { host, port } = endpointAddress(doc.cells[cell].endpoint);
      const address = await resolve(host);
      const slot = slots.get(cell)!;
      await this.api.expectOk(`set server ${slotName(slot)}/cell addr ${address} port ${port}`, /^\s*$|changed from|no need to change/i);
      const status = stats.find((r) => r.pxname === slotName(slot) && r.svname === 'cell')?.status ?? 'MAINT';
      if (status.startsWith('MAINT')) {
        await this.api.expectOk(`set server ${slotName(slot)}/cell state ready`);
        await this.waitUp(slot);
      }
    }
    // The registry first holds old and new cells (a crash here leaves no slot free that routes
    // still name), then the routes, then the exact cell set.
    const union = new Map([...before, ...slots]);
    const contents = mapContents(doc, slots);
    await this.replaceMap('cells', slotRegistry(union));
    for (const name of ['exact', 'prefix', 'buckets', 'meta'] as const) {
      await this.replaceMap(name, contents[name]);
    }
    await this.replaceMap('cells', contents.cells);
    for (const name of ['exact', 'prefix', 'buckets', 'cells', 'meta'] as const) await this.verify(name, contents[name]);
    for (const [cell, slot] of before) {
      if (!slots.has(cell)) await this.api.expectOk(`set server ${slotName(slot)}/cell state maint`);
    }
    return slots;
  }
}
