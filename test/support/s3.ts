import * as crypto from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { S3Client } from '@aws-sdk/client-s3';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS package without type declarations
const S3rver = require('s3rver');

/**
 * A real S3-compatible server on loopback (s3rver) behind a thin conditional-write layer: s3rver
 * ignores If-None-Match / If-Match on PUT and If-Match on DELETE, so the layer answers 412 (and 404
 * for a conditional delete of a missing key) the way S3 does, serializing writes per key so the
 * check and the write are atomic. Everything else passes through untouched.
 * `fault` makes the layer answer the next requests with an error (503, 403) or hang (timeout).
 */
export interface LocalS3 {
  readonly endpoint: string;
  readonly bucket: string;
  /** Requests seen by the layer, for assertions. */
  readonly requests: { method: string; path: string; status: number }[];
  /**
   * Injects a fault into every request until cleared: an S3 error, no answer at all ('hang'), or
   * ('torn') GETs answered with the object's ETag but only the first half of its body, as a read
   * racing a write on a non-atomic store returns.
   */
  fault(kind: { status: number; code: string } | 'hang' | 'torn' | 'chunked' | undefined): void;
  /**
   * Answers as S3 does for a caller whose `s3:ListBucket` permission is `mayList` (undefined: may
   * list everything, s3rver's own behaviour). S3 answers a GET or HEAD of a missing key with 404
   * only when the caller may list the bucket, else 403 AccessDenied (GetObject / HeadObject API
   * reference, "Permissions"); for that check `mayList` gets no prefix, since S3 does not say a
   * grant conditioned on `s3:prefix` counts. A ListObjectsV2 whose prefix the caller may not list
   * is 403 too.
   */
  listPermission(mayList: ((prefix: string | undefined) => boolean) | undefined): void;
  stop(): Promise<void>;
}

export interface LocalS3Options {
  /**
   * S3's clock, in ms since the epoch: the Last-Modified an object gets when a PUT writes it (as a
   * listing, GET and HEAD show it, whole seconds like S3's) and the Date of every answer. A test that
   * judges a report's or a lock's age moves this clock instead of waiting real seconds. With it, the
   * stand-in is also read-after-write consistent as S3 is: a PUT is answered once its object is
   * written, and no request overlaps another (s3rver answers a PUT before its file is written and
   * serves reads of a half-written file), so what such a test reads never depends on timing.
   * @default this machine's clock (s3rver's own)
   */
  readonly now?: () => number;
}

/** S3's error body. */
const s3Error = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;

export async function startLocalS3(bucket = 'test-mappings', options: LocalS3Options = {}): Promise<LocalS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port: upstreamPort } = (await server.run()) as AddressInfo;
  if (options.now) {
    const store = server.store;
    // s3rver's putObject, finishing the object's file before it returns, then dating it by S3's clock
    // (its Last-Modified is the file's mtime).
    store.putObject = async (object: { bucket: string; key: string; content: Buffer | NodeJS.ReadableStream; metadata: Record<string, string> }) => {
      const chunks: Buffer[] = [];
      if (Buffer.isBuffer(object.content)) chunks.push(object.content);
      else for await (const chunk of object.content) chunks.push(Buffer.from(chunk));
      const content = Buffer.concat(chunks);
      const file = store.getResourcePath(object.bucket, object.key, 'object') as string;
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      await fs.promises.writeFile(file, content);
      const md5 = crypto.createHash('md5').update(content).digest('hex');
      await store.putMetadata(object.bucket, object.key, object.metadata, md5);
      const at = options.now!() / 1000;
      await fs.promises.utimes(file, at, at);
      return { size: content.length, md5 };
    };
  }
  /** With `options.now`, one request at a time: each holds this until its answer is sent (or its client gave up). */
  let turn = Promise.resolve();
  const inTurn = (res: http.ServerResponse) => {
    const previous = turn;
    turn = new Promise<void>((release) => res.on('close', release));
    return previous;
  };
  const upstream = `http://127.0.0.1:${upstreamPort}`;
  const requests: LocalS3['requests'] = [];
  const locks = new Map<string, Promise<void>>();
  let fault: Parameters<LocalS3['fault']>[0];
  let mayList: Parameters<LocalS3['listPermission']>[0];

  const deny = (req: http.IncomingMessage, res: http.ServerResponse) => {
    requests.push({ method: req.method!, path: req.url!, status: 403 });
    res.writeHead(403, { 'content-type': 'application/xml' });
    res.end(req.method === 'HEAD' ? undefined : s3Error('AccessDenied', 'Access Denied'));
  };
  /** s3rver's answer headers, with S3's clock as their Date when the test sets one. */
  const dated = (headers: http.IncomingHttpHeaders) => (options.now ? { ...headers, date: new Date(options.now()).toUTCString() } : headers);
  const forward = (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse, missingIsDenied = false) => {
    const proxied = http.request(`${upstream}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      if (answer.statusCode === 404 && missingIsDenied) {
        answer.resume();
        deny(req, res);
        return;
      }
      requests.push({ method: req.method!, path: req.url!, status: answer.statusCode! });
      res.writeHead(answer.statusCode!, dated(answer.headers));
      answer.pipe(res);
    });
    // An upstream hiccup becomes a 502 for this request, never an uncaught error in the test process.
    proxied.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    proxied.end(body);
  };
  const forwardTorn = (req: http.IncomingMessage, res: http.ServerResponse) => {
    // An unsigned read of the whole object, whatever the client's conditions were.
    const proxied = http.request(`${upstream}${req.url!.split('?')[0]}`, { method: 'GET' }, (answer) => {
      const parts: Buffer[] = [];
      answer.on('data', (c: Buffer) => parts.push(c));
      answer.on('end', () => {
        const half = Buffer.concat(parts).subarray(0, Math.floor(Buffer.concat(parts).length / 2));
        requests.push({ method: 'GET', path: req.url!, status: answer.statusCode! });
        res.writeHead(answer.statusCode!, { ...dated(answer.headers), 'content-length': String(half.length) });
        res.end(half);
      });
    });
    proxied.on('error', () => res.destroy());
    proxied.end();
  };
  // The whole object, sent chunked: no Content-Length for the client to judge its size by.
  const forwardChunked = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const proxied = http.request(`${upstream}${req.url!.split('?')[0]}`, { method: 'GET' }, (answer) => {
      requests.push({ method: 'GET', path: req.url!, status: answer.statusCode! });
      const { 'content-length': _length, ...headers } = dated(answer.headers);
      res.writeHead(answer.statusCode!, { ...headers, 'transfer-encoding': 'chunked' });
      answer.on('data', (c: Buffer) => {
        for (let i = 0; i < c.length; i += 1024) res.write(c.subarray(i, i + 1024));
      });
      answer.on('end', () => res.end());
    });
    proxied.on('error', () => res.destroy());
    proxied.end();
  };
  const head = (url: string) =>
    new Promise<{ status: number; etag?: string }>((resolve, reject) => {
      const probe = http.request(`${upstream}${url}`, { method: 'HEAD' }, (answer) => {
        answer.resume();
        resolve({ status: answer.statusCode!, etag: answer.headers.etag as string | undefined });
      });
      probe.on('error', reject);
      probe.end();
    });
  const reject412 = (req: http.IncomingMessage, res: http.ServerResponse) => {
    requests.push({ method: req.method!, path: req.url!, status: 412 });
    res.writeHead(412, { 'content-type': 'application/xml' });
    res.end(s3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold'));
  };

  const proxy = http.createServer((req, res) => {
    req.on('error', () => res.destroy());
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      if (options.now) {
        await inTurn(res);
        // The answers this layer writes itself (faults, 412, 403) carry S3's clock too.
        res.setHeader('date', new Date(options.now()).toUTCString());
      }
      if (fault === 'hang') return; // never answers: the client times out
      if (fault === 'torn' && req.method === 'GET') return forwardTorn(req, res);
      if (fault === 'chunked' && req.method === 'GET') return forwardChunked(req, res);
      if (fault && fault !== 'torn' && fault !== 'chunked') {
        requests.push({ method: req.method!, path: req.url!, status: fault.status });
        res.writeHead(fault.status, { 'content-type': 'application/xml' });
        res.end(s3Error(fault.code, 'injected'));
        return;
      }
      if (mayList && (req.method === 'GET' || req.method === 'HEAD')) {
        const url = new URL(req.url!, 'http://s3');
        const objectKey = decodeURIComponent(url.pathname.split('/').slice(2).join('/'));
        if (objectKey === '') {
          if (!mayList(url.searchParams.get('prefix') ?? '')) return deny(req, res);
          return forward(req, body, res);
        }
        return forward(req, body, res, !mayList(undefined));
      }
      const ifNoneMatch = req.headers['if-none-match'];
      const ifMatch = req.headers['if-match'];
      // Conditional writes (PUT with If-None-Match / If-Match) and conditional deletes (DELETE with If-Match).
      if ((req.method !== 'PUT' && req.method !== 'DELETE') || (!ifNoneMatch && !ifMatch)) return forward(req, body, res);
      const key = req.url!.split('?')[0];
      const previous = locks.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((r) => (release = r));
      locks.set(
        key,
        previous.then(() => mine),
      );
      await previous;
      try {
        // An unsigned probe: s3rver serves anonymous reads on loopback.
        const current = await head(key);
        const exists = current.status === 200;
        if (req.method === 'DELETE' && ifMatch && !exists) {
          // S3 answers a conditional delete of a missing key 404 NoSuchKey ("How to perform conditional deletes").
          requests.push({ method: req.method, path: req.url!, status: 404 });
          res.writeHead(404, { 'content-type': 'application/xml' });
          res.end(s3Error('NoSuchKey', 'The specified key does not exist.'));
          return;
        }
        if ((ifNoneMatch === '*' && exists) || (ifMatch && (!exists || (ifMatch !== '*' && current.etag !== ifMatch)))) {
          reject412(req, res);
          return;
        }
        await new Promise<void>((resolve) => {
          res.on('finish', resolve);
          forward(req, body, res);
        });
      } finally {
        release();
      }
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    requests,
    fault: (kind) => {
      fault = kind;
    },
    listPermission: (rule) => {
      mayList = rule;
    },
    stop: async () => {
      await new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      });
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** An SDK client for the local server (path-style, its fixed credentials). `maxAttempts` 1: no retries. */
export function localS3Client(s3: LocalS3, maxAttempts?: number): S3Client {
  return new S3Client({
    endpoint: s3.endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    maxAttempts,
  });
}
