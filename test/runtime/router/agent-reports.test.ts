import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { MappingDocument, pinKey } from '../../../lib/domain/mapping';
import {
  FetchResult,
  mapContents,
  MappingAgent,
  MappingApplier,
  MappingSource,
  RuntimeApi,
  UNAPPLIABLE_HINT,
  UnappliableDocumentError,
} from '../../../lib/runtime/router';
import { NOW, sampleMapping } from '../../support/mapping';

/**
 * What the agent tells the operator, and how often: a document that is not newer than the one in
 * force, an endpoint that does not resolve. HAProxy and the source are stand-ins (the agent's talk
 * with a real HAProxy is covered by agent.test.ts and edge.test.ts); the clock is the test's.
 */
describe('the mapping agent reports each problem once', () => {
  let stateDir: string;
  let clock: number;
  let text: string;
  let pid: string;
  let unresolvable: string | undefined;
  let applied: number[];
  let logs: Record<string, unknown>[];
  let agent: MappingAgent;

  /** A source that hands out `text` at every poll, as an S3 source without a usable ETag does. */
  const source: MappingSource = {
    description: 'test-source',
    fetch: async (): Promise<FetchResult> => ({ changed: true, text }),
    reset: () => undefined,
  };
  const api = {
    info: async () => ({ Pid: pid }),
    send: async () => '',
    stats: async () => [],
    env: async () => String(sampleMapping().bucketCount),
  } as unknown as RuntimeApi;
  const applier = {
    currentVersion: async () => applied[applied.length - 1],
    currentSlots: async () => new Map<string, number>(),
    refreshAddresses: async () => ({ moved: [], reach: [] }),
    apply: async (doc: MappingDocument) => {
      if (unresolvable)
        throw new UnappliableDocumentError(`cell cell-1: endpoint host ${unresolvable} does not resolve (getaddrinfo ENOTFOUND ${unresolvable})`);
      applied.push(doc.version);
      const slots = new Map(Object.keys(doc.cells).map((cell, i) => [cell, i]));
      return { slots, contents: mapContents(doc, slots) };
    },
  } as unknown as MappingApplier;

  /** Polls `n` times, `everyMs` apart (the clock moves, so retry timers come due). */
  const poll = async (n: number, everyMs = 500) => {
    for (let i = 0; i < n; i++) {
      clock += everyMs;
      await agent.tick();
    }
  };
  const events = (name: string) => logs.filter((l) => l.event === name);

  beforeEach(async () => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-reports-'));
    clock = Date.parse(NOW.now);
    pid = '100';
    unresolvable = undefined;
    applied = [];
    logs = [];
    agent = new MappingAgent({
      api,
      source,
      applier,
      stateDir,
      group: 'test',
      emit: (l) => logs.push(JSON.parse(l)),
      now: () => clock,
      retryUnappliableMs: 2000,
    });
    text = JSON.stringify({ ...sampleMapping(), version: 5 });
    await poll(1);
    expect(applied).toEqual([5]);
  });
  afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

  it('logs a changed document whose version did not increase as ignored, once, saying what to do', async () => {
    const doc = JSON.parse(text) as MappingDocument;
    // The document in force, read again: nothing to say.
    await poll(3);
    expect(events('ignored')).toEqual([]);
    // Edited without raising the version: ignored, said once however often it is read.
    text = JSON.stringify(pinKey(doc, 'tenant-1', 'cell-2', NOW));
    text = JSON.stringify({ ...JSON.parse(text), version: 5 });
    await poll(10);
    expect(events('ignored')).toEqual([
      expect.objectContaining({
        level: 'warn',
        version: 5,
        keptVersion: 5,
        reason:
          'the document changed but its version 5 is the version in force; raise `version` above the version in force to apply it (the `cellctl mapping` commands do)',
      }),
    ]);
    // Another edit, still version 5: news again, once.
    text = JSON.stringify({ ...JSON.parse(text), overrides: { ...doc.overrides, exact: { ...doc.overrides.exact, 'tenant-2': 'cell-3' } } });
    await poll(5);
    expect(events('ignored')).toHaveLength(2);
    // An older version: rejected (and counted) once, with the same fix.
    const before = agent.rejectedDocuments;
    text = JSON.stringify({ ...doc, version: 4 });
    await poll(10);
    expect(agent.rejectedDocuments).toBe(before + 1);
    expect(events('rejected')).toEqual([
      expect.objectContaining({
        version: 4,
        problems: [
          {
            path: '$.version',
            message:
              '4 is older than the version in force 5; raise `version` above the version in force to apply it (the `cellctl mapping` commands do)',
          },
        ],
      }),
    ]);
    expect(applied).toEqual([5]);
    // Raised: applied.
    text = JSON.stringify({ ...doc, version: 6 });
    await poll(1);
    expect(applied).toEqual([5, 6]);
  });

  it('reports an endpoint that does not resolve once, with the hint, while it keeps trying', async () => {
    unresolvable = 'cell-1.orders.cells.internal';
    text = JSON.stringify({ ...JSON.parse(text), version: 6 });
    await poll(20); // 10 s: five retries at 2 s
    expect(events('rejected')).toEqual([
      expect.objectContaining({
        version: 6,
        keptVersion: 5,
        hint: UNAPPLIABLE_HINT,
        retryInSeconds: 2,
        problems: [
          {
            path: '$.cells',
            message: 'cell cell-1: endpoint host cell-1.orders.cells.internal does not resolve (getaddrinfo ENOTFOUND cell-1.orders.cells.internal)',
          },
        ],
      }),
    ]);
    expect(agent.rejectedDocuments).toBe(1);
    // Resolving again: applied at the next retry, without a new document.
    unresolvable = undefined;
    await poll(5);
    expect(applied).toEqual([5, 6]);
  });

  it('a HAProxy restart whose last-known-good no longer resolves is reported once, and re-applied once it does', async () => {
    unresolvable = 'cell-1.orders.cells.internal';
    pid = '200'; // HAProxy restarted (it boots from the persisted maps and keeps serving them)
    await poll(20);
    expect(events('lkg-unappliable')).toEqual([expect.objectContaining({ version: 5, hint: UNAPPLIABLE_HINT, retryInSeconds: 2 })]);
    expect(events('haproxy-restarted')).toHaveLength(1);
    expect(events('apply-error')).toEqual([]);
    unresolvable = undefined;
    await poll(5);
    expect(applied).toEqual([5, 5]);
    expect(events('applied')).toHaveLength(2);
  });
});
