import type { S3Client } from '@aws-sdk/client-s3';
import { ConcurrentWriteError, MappingStore, statusOf, zonesKey } from '../../adapters/mapping-store';
import { initialZones, parseZones, withZoneWeight, ZonesDocument } from '../../domain/zones';
import { parseServedReport, SERVED_FRESHNESS_MS, servedPrefix } from '../../runtime/router/served';

/** A region's zones document as stored (undefined `etag`: none yet, every zone at its full share). */
export interface StoredZones {
  readonly document: ZonesDocument;
  readonly etag?: string;
}

/** The region's zones document from its mapping bucket; a stored one that is not valid is an error naming the fix (nothing is written over it). */
export async function readAwsZones(store: MappingStore, region: string, zones: readonly string[]): Promise<StoredZones> {
  const key = zonesKey(region);
  const raw = await store.readRaw(key);
  if (!raw) return { document: initialZones(region, zones) };
  const parsed = parseZones(raw.text, { region, knownZones: zones });
  if (!parsed.ok)
    throw new Error(
      `s3://${store.bucket}/${key} is not a valid zones document (${parsed.problems[0].path}: ${parsed.problems[0].message}); the routers keep their last-known-good: restore an earlier object version (the bucket is versioned) before changing a zone`,
    );
  return { document: parsed.document, etag: raw.etag };
}

export interface AwsZoneChange {
  readonly before: ZonesDocument;
  readonly after: ZonesDocument;
  /** Writes that lost to a concurrent change and were made again on the newer document. */
  readonly conflicts: number;
}

/**
 * Sets `zone`'s weight in the region's zones document: read, change, write with If-Match (If-None-Match
 * for the first), so two operators' changes never overwrite each other; a write that lost is made
 * again on the newer document (up to 5 times, jittered). A refused change (the last zone serving,
 * an unknown zone) writes nothing.
 */
export async function changeAwsZone(o: {
  readonly store: MappingStore;
  readonly region: string;
  readonly zones: readonly string[];
  readonly zone: string;
  readonly weight: number;
  readonly reason?: string;
}): Promise<AwsZoneChange> {
  for (let conflicts = 0; ; conflicts++) {
    const { document, etag } = await readAwsZones(o.store, o.region, o.zones);
    const after = withZoneWeight(document, o.zone, o.weight, { zones: o.zones, reason: o.reason });
    try {
      await o.store.put(zonesKey(o.region), `${JSON.stringify(after, null, 2)}\n`, etag);
      return { before: document, after, conflicts };
    } catch (error) {
      if (!(error instanceof ConcurrentWriteError) || conflicts >= 5) throw error;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 200 * (conflicts + 1)));
    }
  }
}

/** Which fresh router tasks of the region's groups carry zones version `version` (their served reports). */
export async function zonesCarried(
  s3: S3Client,
  bucket: string,
  groups: readonly string[],
  version: number,
  now = Date.now(),
): Promise<{ readonly tasks: number; readonly behind: readonly string[] }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetObjectCommand, ListObjectsV2Command } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  let tasks = 0;
  const behind: string[] = [];
  for (const group of groups) {
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: servedPrefix(group), ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        if (!object.Key?.endsWith('.json') || !object.LastModified || now - object.LastModified.getTime() > SERVED_FRESHNESS_MS) continue;
        let text: string;
        try {
          text = await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key }))).Body!.transformToString();
        } catch (error) {
          if (statusOf(error) === 404) continue;
          throw error;
        }
        const report = parseServedReport(text);
        if (!report || report.stopped) continue;
        tasks += 1;
        if ((report.zonesVersion ?? 0) < version) behind.push(`${group}/${report.taskId} (zones ${report.zonesVersion ?? 'none'})`);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
  return { tasks, behind };
}

/**
 * Waits until every fresh router task of the region's groups reports zones version `version` in
 * force (the agent reports it after the tick that put the weights on its servers), and says how
 * long that took. Throws, naming the tasks behind, after `timeoutMs`: the document stays written,
 * and they apply it at their next good poll.
 */
export async function waitZonesCarried(o: {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly groups: readonly string[];
  readonly version: number;
  readonly since: number;
  readonly timeoutMs?: number;
  readonly pollMs?: number;
}): Promise<{ readonly ms: number; readonly tasks: number }> {
  const timeout = o.timeoutMs ?? 60_000;
  for (;;) {
    const { tasks, behind } = await zonesCarried(o.s3, o.bucket, o.groups, o.version);
    if (tasks > 0 && behind.length === 0) return { ms: Date.now() - o.since, tasks };
    if (Date.now() - o.since > timeout)
      throw new Error(
        tasks === 0
          ? `no router task of ${o.groups.join(', ')} has reported in the last ${SERVED_FRESHNESS_MS / 1000} s (served/<group>/ in s3://${o.bucket}); the zones document is written and takes effect as tasks poll`
          : `after ${timeout / 1000} s, ${behind.length} of ${tasks} router tasks do not carry zones version ${o.version} yet: ${behind.slice(0, 5).join(', ')}; the document is written, and they apply it at their next good poll (their logs say why not)`,
      );
    await new Promise((r) => setTimeout(r, o.pollMs ?? 1000));
  }
}
