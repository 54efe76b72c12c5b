import { createHash, createHmac } from 'crypto';
import * as http from 'http';
import { AddressInfo } from 'net';
import { expiresInProblem, ZonalShiftClient, ZonalShiftError } from '../../../lib/adapters/aws/zonal-shift';

/**
 * The zonal shift client against recorded answers: moto 5.2 has no ARC zonal shift, so a local
 * server answers as the service model (botocore arc-zonal-shift/2022-10-30) says the service does:
 * POST /zonalshifts 201, PATCH and DELETE /zonalshifts/{id} 200, GET /zonalshifts?resourceIdentifier=&status=
 * 200 with `items`, times in epoch seconds, errors typed by `x-amzn-errortype`. Every request's
 * SigV4 signature is recomputed here from what arrived (service arc-zonal-shift), so a request
 * altered after signing, or signed for another service or region, fails.
 */
const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const NLB = 'arn:aws:elasticloadbalancing:us-east-1:111111111111:loadbalancer/net/orders-lane-1/0123456789abcdef';

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly body: unknown;
  readonly signatureValid: boolean;
  readonly scope: string;
}

const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const sha = (data: string) => createHash('sha256').update(data).digest('hex');
const encode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The SigV4 signature of a received request, computed from its own parts (AWS General Reference, "Create a signed AWS API request"). */
function expectedSignature(req: http.IncomingMessage, url: URL, body: string, region: string): { valid: boolean; scope: string } {
  const auth = String(req.headers.authorization ?? '');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]+)$/.exec(auth);
  if (!m) return { valid: false, scope: '' };
  const [, , date, signedRegion, service, signedHeaders, signature] = m;
  const amzDate = String(req.headers['x-amz-date']);
  const headers = signedHeaders
    .split(';')
    .map((h) => `${h}:${String(req.headers[h]).trim()}\n`)
    .join('');
  const query = [...url.searchParams.entries()]
    .map(([k, v]) => [encode(k), encode(v)])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [req.method, url.pathname, query, headers, signedHeaders, sha(body)].join('\n');
  const scope = `${date}/${signedRegion}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${CREDENTIALS.secretAccessKey}`, date), signedRegion), service), 'aws4_request');
  return { valid: hmac(key, toSign).toString('hex') === signature && signedRegion === region && service === 'arc-zonal-shift', scope };
}

describe('ZonalShiftClient against recorded ARC zonal shift answers', () => {
  let server: http.Server;
  let client: ZonalShiftClient;
  const seen: Seen[] = [];
  let active: Record<string, unknown>[] = [];
  let next = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const url = new URL(req.url!, 'http://local');
        const { valid, scope } = expectedSignature(req, url, text, 'us-east-1');
        const body = text ? JSON.parse(text) : undefined;
        seen.push({ method: req.method!, path: url.pathname, query: Object.fromEntries(url.searchParams), body, signatureValid: valid, scope });
        const answer = (status: number, value: unknown, type?: string) => {
          res.writeHead(status, {
            'content-type': 'application/json',
            ...(type ? { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazonaws.arczonalshift/` } : {}),
          });
          res.end(JSON.stringify(value));
        };
        if (!valid)
          return answer(
            403,
            { message: 'The request signature we calculated does not match the signature you provided.' },
            'InvalidSignatureException',
          );
        const id = url.pathname.split('/')[2];
        if (req.method === 'POST' && url.pathname === '/zonalshifts') {
          if (active.some((s) => s.resourceIdentifier === body.resourceIdentifier))
            return answer(
              409,
              { message: 'A zonal shift is already active for this resource', reason: 'SimultaneousZonalShiftsConflict' },
              'ConflictException',
            );
          const shift = { zonalShiftId: `shift-${++next}`, status: 'ACTIVE', startTime: 1764777600, expiryTime: 1764777600 + 3600, ...body };
          delete shift.expiresIn;
          active.push(shift);
          return answer(201, shift);
        }
        if (req.method === 'GET' && url.pathname === '/zonalshifts')
          return answer(200, { items: active.filter((s) => s.resourceIdentifier === url.searchParams.get('resourceIdentifier')) });
        const shift = active.find((s) => s.zonalShiftId === id);
        if (!shift) return answer(404, { message: `zonal shift ${id} not found` }, 'ResourceNotFoundException');
        if (req.method === 'PATCH') return answer(200, Object.assign(shift, { comment: body.comment, expiryTime: 1764777600 + 7200 }));
        if (req.method === 'DELETE') {
          active = active.filter((s) => s !== shift);
          return answer(200, { ...shift, status: 'CANCELED' });
        }
        answer(400, { message: 'unknown operation', reason: 'MissingValue' }, 'ValidationException');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new ZonalShiftClient({
      region: 'us-east-1',
      credentials: CREDENTIALS,
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
  });
  afterAll(() => server.close());

  it("starts a shift with the model's request (POST /zonalshifts, all four members), signed for arc-zonal-shift in the region", async () => {
    const { shift, started } = await client.shiftAway({
      resourceIdentifier: NLB,
      awayFrom: 'use1-az2',
      expiresIn: '12h',
      comment: 'cellctl zone drain: packet loss',
    });
    expect(started).toBe(true);
    expect(shift).toMatchObject({ zonalShiftId: 'shift-1', awayFrom: 'use1-az2', status: 'ACTIVE', startTime: new Date(1764777600 * 1000) });
    expect(seen.map((s) => [s.method, s.path, s.signatureValid])).toEqual([
      ['GET', '/zonalshifts', true],
      ['POST', '/zonalshifts', true],
    ]);
    expect(seen[0].query).toEqual({ resourceIdentifier: NLB, status: 'ACTIVE' });
    expect(seen[1].body).toEqual({ resourceIdentifier: NLB, awayFrom: 'use1-az2', expiresIn: '12h', comment: 'cellctl zone drain: packet loss' });
    expect(seen[1].scope).toMatch(/^\d{8}\/us-east-1\/arc-zonal-shift\/aws4_request$/);
  });

  it('updates the active shift away from the same zone instead of starting another, and refuses one away from another zone', async () => {
    seen.length = 0;
    const { shift, started } = await client.shiftAway({ resourceIdentifier: NLB, awayFrom: 'use1-az2', expiresIn: '2h', comment: 'still draining' });
    expect(started).toBe(false);
    expect(shift.expiryTime).toEqual(new Date((1764777600 + 7200) * 1000));
    expect(seen.map((s) => [s.method, s.path])).toEqual([
      ['GET', '/zonalshifts'],
      ['PATCH', '/zonalshifts/shift-1'],
    ]);
    expect(seen[1].body).toEqual({ expiresIn: '2h', comment: 'still draining' });
    await expect(client.shiftAway({ resourceIdentifier: NLB, awayFrom: 'use1-az1', expiresIn: '1h', comment: 'x' })).rejects.toThrow(
      /already shifted away from use1-az2 .* undrain use1-az2 first/,
    );
  });

  it("cancels the shifts away from a zone, and types the service's errors by x-amzn-errortype", async () => {
    seen.length = 0;
    const cancelled = await client.cancelAway(NLB, 'use1-az2');
    expect(cancelled.map((s) => s.status)).toEqual(['CANCELED']);
    expect(seen.map((s) => [s.method, s.path])).toEqual([
      ['GET', '/zonalshifts'],
      ['DELETE', '/zonalshifts/shift-1'],
    ]);
    const error = await client.cancel('shift-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ZonalShiftError);
    expect(error).toMatchObject({ code: 'ResourceNotFoundException', status: 404 });
    const wrongKey = new ZonalShiftClient({
      region: 'us-east-1',
      credentials: { ...CREDENTIALS, secretAccessKey: 'wrong' },
      endpoint: (client as unknown as { endpoint: string }).endpoint,
    });
    await expect(wrongKey.active(NLB)).rejects.toMatchObject({ code: 'InvalidSignatureException', status: 403 });
  });

  it("checks expiresIn as the model's pattern does: whole minutes or hours, at most 72h", () => {
    expect(expiresInProblem('90m')).toBeUndefined();
    expect(expiresInProblem('72h')).toBeUndefined();
    expect(expiresInProblem('3d')).toMatch(/whole minutes or hours/);
    expect(expiresInProblem('73h')).toMatch(/at most 72h/);
    expect(expiresInProblem('0h')).toMatch(/whole minutes or hours/);
  });
});
