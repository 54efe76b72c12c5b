import { DOCUMENT_LIMITS, documentLimits, MAPPING_MEMORY_MIB, MappingDocument, parseMapping, validateMapping } from '../../../lib/domain/mapping';
import { sampleMapping } from '../../support/mapping';

type Mutable = { -readonly [K in keyof MappingDocument]: unknown };
const mutate = (edit: (doc: Mutable) => void): unknown => {
  const doc = JSON.parse(JSON.stringify(sampleMapping())) as Mutable;
  edit(doc);
  return doc;
};

describe('validateMapping', () => {
  it('accepts a generated document', () => {
    expect(validateMapping(sampleMapping())).toEqual([]);
  });

  it('accepts the DESIGN.md example', () => {
    const doc = {
      schemaVersion: 1,
      version: 12,
      createdAt: '2026-11-29T16:00:00Z',
      hash: 'sha256-u32be',
      bucketCount: 16384,
      cells: {
        'cell-1': { endpoint: 'https://cell-1.internal.example', state: 'active' },
        'cell-2': { endpoint: 'https://cell-2.internal.example', state: 'active' },
        'cell-0': { endpoint: 'https://cell-0.internal.example', state: 'active' },
      },
      buckets: [
        { from: 0, to: 8191, cell: 'cell-1' },
        { from: 8192, to: 16383, cell: 'cell-2' },
      ],
      overrides: { exact: { 'tenant-42': 'cell-2' }, prefix: { 'internal-': 'cell-0' } },
    };
    expect(validateMapping(doc)).toEqual([]);
  });

  const cases: [string, (doc: Mutable) => void, string, RegExp][] = [
    [
      'gap',
      (d) => {
        (d.buckets as { to: number }[])[0].to -= 1;
      },
      '$.buckets[1]',
      /gap: buckets 4095 … 4095 belong to no cell/,
    ],
    [
      'gap at the end',
      (d) => {
        (d.buckets as { to: number }[])[3].to -= 10;
      },
      '$.buckets',
      /gap: buckets 16374 … 16383/,
    ],
    [
      'overlap',
      (d) => {
        (d.buckets as { from: number }[])[1].from -= 1;
      },
      '$.buckets[1]',
      /overlap or unsorted/,
    ],
    [
      'unsorted',
      (d) => {
        (d.buckets as unknown[]).reverse();
      },
      '$.buckets[0]',
      /gap/,
    ],
    [
      'out of bounds',
      (d) => {
        (d.buckets as { to: number }[])[3].to = 20000;
      },
      '$.buckets[3]',
      /out of bounds 0 … 16383/,
    ],
    [
      'non-integer',
      (d) => {
        (d.buckets as { to: unknown }[])[0].to = 4095.5;
      },
      '$.buckets[0]',
      /must be integers/,
    ],
    [
      'from after to',
      (d) => {
        (d.buckets as { from: number; to: number }[])[0].from = 5000;
      },
      '$.buckets[0]',
      /greater than to/,
    ],
    [
      'unknown cell',
      (d) => {
        (d.buckets as { cell: string }[])[0].cell = 'ghost';
      },
      '$.buckets[0].cell',
      /unknown cell "ghost"/,
    ],
    [
      'draining cell with buckets',
      (d) => {
        (d.cells as Record<string, { state: string }>)['cell-1'].state = 'draining';
      },
      '$.buckets[0].cell',
      /cell-1 is draining; only active cells take buckets/,
    ],
    [
      'override to unknown cell',
      (d) => {
        (d.overrides as { exact: Record<string, string> }).exact['tenant-1'] = 'ghost';
      },
      '$.overrides.exact["tenant-1"]',
      /unknown cell/,
    ],
    [
      'bad key in overrides',
      (d) => {
        (d.overrides as { exact: Record<string, string> }).exact['bad key'] = 'cell-1';
      },
      '$.overrides.exact["bad key"]',
      /key must match/,
    ],
    [
      'bad prefix',
      (d) => {
        (d.overrides as { prefix: Record<string, string> }).prefix['-x'] = 'cell-1';
      },
      '$.overrides.prefix["-x"]',
      /prefix must match/,
    ],
    [
      'wrong schemaVersion',
      (d) => {
        d.schemaVersion = 3;
      },
      '$.schemaVersion',
      /must be 1, or 2 with home regions, got 3/,
    ],
    [
      'schema 2 without its home tables',
      (d) => {
        d.schemaVersion = 2;
      },
      '$.homes',
      /schema 2 needs \{"tables"/,
    ],
    [
      'wrong hash',
      (d) => {
        d.hash = 'md5';
      },
      '$.hash',
      /must be "sha256-u32be"/,
    ],
    [
      'bucketCount not a power of two',
      (d) => {
        d.bucketCount = 10000;
      },
      '$.bucketCount',
      /power of two/,
    ],
    [
      'bucketCount too small',
      (d) => {
        d.bucketCount = 512;
      },
      '$.bucketCount',
      /between 1024 and 1048576/,
    ],
    [
      'bucketCount too large',
      (d) => {
        d.bucketCount = 2 ** 21;
      },
      '$.bucketCount',
      /between 1024 and 1048576/,
    ],
    [
      'version zero',
      (d) => {
        d.version = 0;
      },
      '$.version',
      /positive integer/,
    ],
    [
      'version fractional',
      (d) => {
        d.version = 1.5;
      },
      '$.version',
      /positive integer/,
    ],
    [
      'bad endpoint',
      (d) => {
        (d.cells as Record<string, { endpoint: string }>)['cell-1'].endpoint = 'ftp://x';
      },
      '$.cells.cell-1.endpoint',
      /http\(s\) URL/,
    ],
    [
      'bad state',
      (d) => {
        (d.cells as Record<string, { state: string }>)['cell-1'].state = 'gone';
      },
      '$.cells.cell-1.state',
      /active, draining or quarantine/,
    ],
    [
      'unknown field',
      (d) => {
        (d as Record<string, unknown>).extra = 1;
      },
      '$.extra',
      /unknown field/,
    ],
    [
      'bad createdAt',
      (d) => {
        d.createdAt = 'yesterday';
      },
      '$.createdAt',
      /ISO 8601/,
    ],
  ];

  it.each(cases)('reports %s with its JSON path', (_name, edit, path, message) => {
    const problems = validateMapping(mutate(edit));
    expect(problems).toEqual(expect.arrayContaining([{ path, message: expect.stringMatching(message) }]));
  });

  it('refuses a version that does not replace the current one', () => {
    const doc = sampleMapping();
    expect(validateMapping(doc, { previousVersion: 1 })).toEqual([{ path: '$.version', message: '1 is not greater than the current version 1' }]);
    expect(validateMapping(doc, { previousVersion: 0 })).toEqual([]);
  });
});

describe('documents valid in form but wrong for the routers', () => {
  it("refuses a bucket count other than the fleet's", () => {
    const doc = sampleMapping();
    expect(validateMapping(doc, { bucketCount: 16384 })).toEqual([]);
    expect(validateMapping({ ...doc, bucketCount: 65536, buckets: [{ from: 0, to: 65535, cell: 'cell-1' }] }, { bucketCount: 16384 })).toEqual([
      { path: '$.bucketCount', message: expect.stringMatching(/^65536, but the fleet's routers hash keys into 16384 buckets/) },
    ]);
  });

  it('refuses a version a next version or a rollback could not follow, 2^52 itself included', () => {
    for (const version of [1e308, 2 ** 53, 2 ** 52 + 1, 2 ** 52]) {
      expect(validateMapping({ ...sampleMapping(), version })).toEqual([
        { path: '$.version', message: expect.stringContaining(`is 2^52 (${2 ** 52}) or more`) },
      ]);
    }
    expect(validateMapping({ ...sampleMapping(), version: 2 ** 52 - 1 })).toEqual([]);
  });

  it('refuses endpoints that differ only in spelling: loopback by any name, a trailing dot, case; and a user name, and the router itself', () => {
    const doc = sampleMapping();
    const [first, second] = Object.keys(doc.cells);
    const withEndpoints = (a: string, b: string) => ({
      ...doc,
      cells: { ...doc.cells, [first]: { ...doc.cells[first], endpoint: a }, [second]: { ...doc.cells[second], endpoint: b } },
    });
    for (const [a, b] of [
      ['http://127.0.0.1:19001', 'http://localhost:19001'],
      ['http://127.0.0.1:19001', 'http://[::1]:19001'],
      ['http://127.0.0.1:19001', 'http://0.0.0.0:19001/'],
      ['http://127.0.0.1:19001', 'http://127.1:19001'],
      ['http://cell-b.orders.cells.internal', 'http://Cell-B.orders.cells.internal.:80'],
      ['https://cell-b.example.com', 'http://cell-b.example.com:443'],
    ]) {
      expect([a, b, validateMapping(withEndpoints(a, b))]).toEqual([
        a,
        b,
        [{ path: `$.cells.${second}.endpoint`, message: expect.stringContaining(`is cell ${first}'s endpoint too`) }],
      ]);
    }
    // Another port of the same host is another server.
    expect(validateMapping(withEndpoints('http://127.0.0.1:19001', 'http://localhost:19002'))).toEqual([]);
    expect(validateMapping(withEndpoints('http://127.0.0.1:19001', 'http://name@127.0.0.1:19002'))).toEqual([
      { path: `$.cells.${second}.endpoint`, message: expect.stringContaining('has a user name (user@host)') },
    ]);
    const router = { routerEndpoints: ['http://0.0.0.0:8080', 'http://127.0.0.1:8081', 'not a url'] };
    expect(validateMapping(withEndpoints('http://127.0.0.1:19001', 'http://localhost:8080'), router)).toEqual([
      { path: `$.cells.${second}.endpoint`, message: expect.stringContaining("is the router's own address") },
    ]);
    expect(validateMapping(withEndpoints('http://127.0.0.1:19001', 'http://127.0.0.1:19002'), router)).toEqual([]);
  });

  it('refuses two cells with the same endpoint, however the URL is spelled', () => {
    const doc = sampleMapping();
    const [first, second] = Object.keys(doc.cells);
    const endpoint = doc.cells[first].endpoint;
    const url = new URL(endpoint);
    for (const same of [endpoint, `${url.protocol}//${url.hostname.toUpperCase()}:${url.port || (url.protocol === 'https:' ? 443 : 80)}/`]) {
      const problems = validateMapping({ ...doc, cells: { ...doc.cells, [second]: { ...doc.cells[second], endpoint: same } } });
      expect(problems).toEqual([{ path: `$.cells.${second}.endpoint`, message: expect.stringContaining(`is cell ${first}'s endpoint too`) }]);
    }
  });

  it('refuses more overrides and bucket ranges than a router task holds, and a larger text', () => {
    const doc = sampleMapping();
    const limits = { maxEntries: doc.buckets.length + 10, maxBytes: 4096, maxCost: Infinity };
    const exact = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`pin-${i}`, doc.buckets[0].cell]));
    expect(validateMapping({ ...doc, overrides: { exact: exact(9), prefix: {} } }, { limits })).toEqual([]);
    expect(validateMapping({ ...doc, overrides: { exact: exact(11), prefix: {} } }, { limits })).toEqual([
      { path: '$', message: expect.stringMatching(/^15 overrides, frozen keys and bucket ranges; a router task holds at most 14/) },
    ]);
    const large = parseMapping(JSON.stringify({ ...doc, overrides: { exact: exact(200), prefix: {} } }), { limits: { ...limits, maxEntries: 1000 } });
    expect(large).toEqual({
      ok: false,
      problems: [{ path: '$', message: expect.stringMatching(/^the document is [\d.]+ MiB; a router task holds at most/) }],
    });
  });

  it('holds entries and bytes together to what a router task has: long keys cost more per entry than short ones', () => {
    const pins = (n: number, length: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`t-${i}`.padEnd(length, 'k'), sampleMapping().buckets[0].cell]));
    // As measured (bench:router-memory, a document applied over one as large): 100,000 pins of
    // 15-character keys fit; 130,000 of 128-character keys (about 17 MiB) do not, though each limit alone holds.
    const short = JSON.stringify({ ...sampleMapping(), overrides: { exact: pins(100_000, 15), prefix: {} } });
    expect(parseMapping(short).ok).toBe(true);
    const long = JSON.stringify({ ...sampleMapping(), overrides: { exact: pins(130_000, 128), prefix: {} } });
    expect(Buffer.byteLength(long)).toBeLessThan(DOCUMENT_LIMITS.maxBytes);
    expect(130_000).toBeLessThan(DOCUMENT_LIMITS.maxEntries);
    expect(parseMapping(long)).toEqual({
      ok: false,
      problems: [
        {
          path: '$',
          message: expect.stringMatching(/^130\d{3} entries in 1\d\.\d MiB of JSON cost a router task about 3\d\d\.\d MiB .* it has 192\.0 MiB/),
        },
      ],
    });
  });

  it("derives the limits from the router task's memory", () => {
    expect(documentLimits(MAPPING_MEMORY_MIB)).toEqual(DOCUMENT_LIMITS);
    expect(DOCUMENT_LIMITS.maxEntries).toBeGreaterThanOrEqual(100_000); // bench:mapping's 100,000 pins fit
    expect(documentLimits(MAPPING_MEMORY_MIB * 2).maxEntries).toBeGreaterThan(DOCUMENT_LIMITS.maxEntries * 1.9);
  });
});

describe('parseMapping', () => {
  it('reports truncated JSON without throwing', () => {
    const text = JSON.stringify(sampleMapping());
    const result = parseMapping(text.slice(0, text.length / 2));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems[0]).toEqual({ path: '$', message: expect.stringMatching(/^not valid JSON/) });
  });

  it('returns the document when valid', () => {
    const result = parseMapping(JSON.stringify(sampleMapping()));
    expect(result.ok && result.document.version).toBe(1);
  });
});
