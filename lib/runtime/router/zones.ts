import * as fs from 'fs';
import * as path from 'path';
import { writeFileAtomic } from '../../domain/files';
import { MappingDocument } from '../../domain/mapping';
import { parseZones, ZonesDocument } from '../../domain/zones';
import { MappingApplier } from './apply';
import { MappingSource } from './sources';

export const ZONES_LKG_FILE = 'zones-last-known-good.json';

export interface ZoneWeightsOptions {
  /** Where the region's zones document is read (S3: zonesKey(region) in the mapping bucket). */
  readonly source: MappingSource;
  readonly applier: MappingApplier;
  /** Where the last-known-good zones document is kept across restarts. */
  readonly stateDir: string;
  /** This router's region: a document of another region is refused. @default - not checked */
  readonly region?: string;
  readonly emit: (line: string) => void;
}

/**
 * Follows the region's zones document (lib/domain/zones) beside the mapping, with the mapping's
 * guarantees: each candidate is validated (the region, the zones this router has servers for, at
 * least one zone serving) and applied only when its version is above the one in force; anything
 * else is rejected, logged once, and the last-known-good stays in force, also across an agent
 * restart. Applying sets every zonal server's weight through the runtime API (MappingApplier.applyZones):
 * a drained zone's servers get no new request from the next request on, requests in flight finish.
 */
export class ZoneWeightsFollower {
  private lkg?: ZonesDocument;
  private rejectedText?: string;
  private missing = false;
  private rejectedCount = 0;
  /** A document accepted this tick, logged as applied once its weights are on the servers. */
  private accepted?: { previousVersion: number | undefined };

  constructor(private readonly o: ZoneWeightsOptions) {}

  public get version(): number | undefined {
    return this.lkg?.version;
  }

  public get document(): ZonesDocument | undefined {
    return this.lkg;
  }

  public get rejected(): number {
    return this.rejectedCount;
  }

  private log(event: string, fields: Record<string, unknown>): void {
    this.o.emit(JSON.stringify({ level: event === 'zones-applied' || event === 'zones-lkg-loaded' ? 'info' : 'warn', event, ...fields }));
  }

  private knownZones(): string[] {
    return this.o.applier.serverZones.filter((z): z is string => z !== undefined);
  }

  /** Loads the persisted last-known-good (if any): the applier carries its weights from the first apply on. */
  public loadLastKnownGood(): void {
    const file = path.join(this.o.stateDir, ZONES_LKG_FILE);
    if (!fs.existsSync(file)) return;
    const parsed = parseZones(fs.readFileSync(file, 'utf8'), { region: this.o.region });
    if (!parsed.ok) return void this.log('zones-lkg-invalid', { problem: parsed.problems[0] });
    this.lkg = parsed.document;
    this.o.applier.useZones(this.lkg);
    this.log('zones-lkg-loaded', { version: this.lkg.version });
  }

  /**
   * One poll: fetch, validate, apply a newer document to the servers of `mapping`'s cells (the mapping in force).
   */
  public async tick(mapping: MappingDocument | undefined): Promise<void> {
    let result;
    try {
      result = await this.o.source.fetch();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') result = { changed: false as const, missing: true as const };
      else {
        this.log('zones-fetch-error', {
          source: this.o.source.description,
          error: `${(error as Error).name}: ${(error as Error).message}`,
          keptVersion: this.lkg?.version,
        });
        result = { changed: false as const };
      }
    }
    if (!result.changed && result.missing) {
      if (!this.missing)
        this.log('zones-no-document', {
          source: this.o.source.description,
          keptVersion: this.lkg?.version,
          hint: 'every zone takes its full share until `cellctl zone drain` writes one',
        });
      this.missing = true;
    } else if (result.changed) {
      this.missing = false;
      if ('tooLarge' in result) this.reject(`${result.tooLarge} bytes`, [{ path: '$', message: `${result.tooLarge} bytes: not a zones document` }]);
      else this.consider(result.text);
    }
    // Only a newly accepted document touches the servers (until that succeeds): weights already in
    // force stay there, and servers a mapping apply points (a new cell, a HAProxy restart) take them
    // from the applier (MappingApplier.pointSlot), so an idle tick costs no runtime API call.
    if (this.accepted && this.lkg) {
      const changed = await this.o.applier.applyZones(this.lkg, mapping);
      // Logged once the servers carry the weights: from here on no new request goes against them.
      this.log('zones-applied', {
        version: this.lkg.version,
        weights: Object.fromEntries(Object.entries(this.lkg.zones).map(([z, s]) => [z, s.weight])),
        servers: changed,
        ...(this.accepted.previousVersion !== undefined ? { previousVersion: this.accepted.previousVersion } : {}),
      });
      this.accepted = undefined;
    }
  }

  private consider(text: string): void {
    const parsed = parseZones(text, { region: this.o.region, knownZones: this.knownZones().length > 0 ? this.knownZones() : undefined });
    if (!parsed.ok) return this.reject(text, parsed.problems.slice(0, 5));
    const doc = parsed.document;
    if (this.lkg && doc.version <= this.lkg.version) {
      if (doc.version < this.lkg.version || JSON.stringify(doc) !== JSON.stringify(this.lkg))
        this.reject(text, [
          {
            path: '$.version',
            message: `${doc.version} is not above the version in force ${this.lkg.version}: a stale or edited document; \`cellctl zone\` raises the version with every change`,
          },
        ]);
      return;
    }
    writeFileAtomic(path.join(this.o.stateDir, ZONES_LKG_FILE), text);
    this.accepted = { previousVersion: this.lkg?.version };
    this.lkg = doc;
    this.rejectedText = undefined;
  }

  private reject(text: string, problems: readonly { path: string; message: string }[]): void {
    if (this.rejectedText === text) return;
    this.rejectedText = text;
    this.rejectedCount += 1;
    this.log('zones-rejected', { source: this.o.source.description, keptVersion: this.lkg?.version, problems });
  }
}
