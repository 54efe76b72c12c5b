import { createHash, createHmac, Hash, Hmac } from 'crypto';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

/**
 * Amazon Application Recovery Controller's zonal shift API (service `arc-zonal-shift`, 2022-10-30,
 * REST-JSON, SigV4 signing name `arc-zonal-shift`, host `arc-zonal-shift.<region>.amazonaws.com`),
 * called directly: the SDK's client package is not among this project's dependencies. The wire
 * shapes are the service model's (botocore `arc-zonal-shift/2022-10-30/service-2.json`): start is
 * POST /zonalshifts (201), update PATCH /zonalshifts/{id}, cancel DELETE /zonalshifts/{id}, list
 * GET /zonalshifts?resourceIdentifier=&status=; times are epoch seconds; an error's type is the
 * `x-amzn-errortype` header (else `__type` or `code` in the body).
 */
export interface ZonalShift {
  readonly zonalShiftId: string;
  readonly resourceIdentifier: string;
  readonly awayFrom: string;
  readonly comment: string;
  readonly status: 'ACTIVE' | 'EXPIRED' | 'CANCELED' | string;
  readonly expiryTime: Date;
  readonly startTime: Date;
}

export class ZonalShiftError extends Error {
  constructor(
    public readonly code: string,
    public readonly status: number,
    message: string,
    public readonly reason?: string,
  ) {
    super(message);
    this.name = code;
  }
}

/** `expiresIn` as the API takes it: whole minutes or hours (`^([1-9][0-9]*)(m|h)$`), at most 72 h when started. */
export const EXPIRES_IN_PATTERN = /^([1-9][0-9]*)(m|h)$/;
export const MAX_SHIFT_MINUTES = 72 * 60;
/** A comment is at most 128 characters. */
export const MAX_SHIFT_COMMENT = 128;

export function expiresInProblem(expiresIn: string): string | undefined {
  const m = EXPIRES_IN_PATTERN.exec(expiresIn);
  if (!m) return `${expiresIn}: give whole minutes or hours, for example 90m or 12h`;
  const minutes = Number(m[1]) * (m[2] === 'h' ? 60 : 1);
  if (minutes > MAX_SHIFT_MINUTES) return `${expiresIn}: a zonal shift starts for at most 72h`;
  return undefined;
}

type Bytes = string | ArrayBuffer | ArrayBufferView;
const bytesOf = (data: Bytes): string | Uint8Array =>
  typeof data === 'string'
    ? data
    : data instanceof ArrayBuffer
      ? new Uint8Array(data)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** SHA-256 and HMAC-SHA-256 from node's crypto, as SignatureV4 takes them. */
export class NodeSha256 {
  private hash: Hash | Hmac;
  private readonly secret?: string | Uint8Array;
  constructor(secret?: Bytes) {
    this.secret = secret === undefined ? undefined : bytesOf(secret);
    this.hash = this.secret ? createHmac('sha256', this.secret) : createHash('sha256');
  }
  update(data: Bytes): void {
    this.hash.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.secret ? createHmac('sha256', this.secret) : createHash('sha256');
  }
}

export interface ZonalShiftClientOptions {
  readonly region: string;
  /** @default the standard credential chain */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** @default AWS_ENDPOINT_URL_ARC_ZONAL_SHIFT, else https://arc-zonal-shift.<region>.amazonaws.com */
  readonly endpoint?: string;
  /** One attempt's limit. @default 10000 */
  readonly timeoutMs?: number;
}

const seconds = (value: unknown) => new Date(Number(value) * 1000);

function shiftOf(body: Record<string, unknown>): ZonalShift {
  return {
    zonalShiftId: String(body.zonalShiftId),
    resourceIdentifier: String(body.resourceIdentifier),
    awayFrom: String(body.awayFrom),
    comment: String(body.comment ?? ''),
    status: String(body.status),
    expiryTime: seconds(body.expiryTime),
    startTime: seconds(body.startTime),
  };
}

export class ZonalShiftClient {
  private readonly endpoint: string;

  constructor(private readonly o: ZonalShiftClientOptions) {
    this.endpoint = (o.endpoint ?? process.env.AWS_ENDPOINT_URL_ARC_ZONAL_SHIFT ?? `https://arc-zonal-shift.${o.region}.amazonaws.com`).replace(
      /\/$/,
      '',
    );
  }

  private async credentials(): Promise<AwsCredentialIdentity> {
    const given = this.o.credentials;
    if (given) return typeof given === 'function' ? given() : given;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
    const { defaultProvider } = require('@aws-sdk/credential-provider-node') as typeof import('@aws-sdk/credential-provider-node');
    return defaultProvider()();
  }

  private async call(method: string, pathname: string, query: Record<string, string> = {}, body?: unknown): Promise<Record<string, unknown>> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
    const { SignatureV4 } = require('@smithy/signature-v4') as typeof import('@smithy/signature-v4');
    const url = new URL(`${this.endpoint}${pathname}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const signer = new SignatureV4({ service: 'arc-zonal-shift', region: this.o.region, credentials: await this.credentials(), sha256: NodeSha256 });
    const signed = await signer.sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query,
      headers: { host: url.host, ...(text !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: text,
    });
    const search = new URLSearchParams(query).toString();
    const response = await fetch(`${url.origin}${url.pathname}${search ? `?${search}` : ''}`, {
      method,
      headers: signed.headers as Record<string, string>,
      body: text,
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000),
    });
    const answer = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = answer ? (JSON.parse(answer) as Record<string, unknown>) : {};
    } catch {
      parsed = { message: answer };
    }
    if (!response.ok) {
      const raw = response.headers.get('x-amzn-errortype') ?? String(parsed.__type ?? parsed.code ?? `HTTP${response.status}`);
      const code = raw.split(':')[0].split(',')[0].split('#').pop()!;
      throw new ZonalShiftError(
        code,
        response.status,
        `${code}: ${String(parsed.message ?? parsed.Message ?? answer)}`,
        parsed.reason as string | undefined,
      );
    }
    return parsed;
  }

  /** StartZonalShift: traffic for `resourceIdentifier` (a load balancer ARN) leaves `awayFrom` (an AZ ID) until `expiresIn`. */
  public async start(input: { resourceIdentifier: string; awayFrom: string; expiresIn: string; comment: string }): Promise<ZonalShift> {
    return shiftOf(await this.call('POST', '/zonalshifts', {}, { ...input, comment: input.comment.slice(0, MAX_SHIFT_COMMENT) }));
  }

  public async update(zonalShiftId: string, input: { expiresIn?: string; comment?: string }): Promise<ZonalShift> {
    return shiftOf(
      await this.call(
        'PATCH',
        `/zonalshifts/${encodeURIComponent(zonalShiftId)}`,
        {},
        { ...input, ...(input.comment ? { comment: input.comment.slice(0, MAX_SHIFT_COMMENT) } : {}) },
      ),
    );
  }

  public async cancel(zonalShiftId: string): Promise<ZonalShift> {
    return shiftOf(await this.call('DELETE', `/zonalshifts/${encodeURIComponent(zonalShiftId)}`));
  }

  /** The active zonal shifts of `resourceIdentifier` (every page). */
  public async active(resourceIdentifier: string): Promise<ZonalShift[]> {
    const shifts: ZonalShift[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.call('GET', '/zonalshifts', { resourceIdentifier, status: 'ACTIVE', ...(nextToken ? { nextToken } : {}) });
      for (const item of (page.items as Record<string, unknown>[] | undefined) ?? []) shifts.push(shiftOf(item));
      nextToken = page.nextToken as string | undefined;
    } while (nextToken);
    return shifts.filter((s) => s.resourceIdentifier === resourceIdentifier && s.status === 'ACTIVE');
  }

  /**
   * Shifts `resourceIdentifier` away from `awayFrom`: updates the resource's active shift away from
   * that zone (a new expiry and comment), or starts one. A resource has one active customer shift at a
   * time, so one away from another zone is refused here, naming it.
   */
  public async shiftAway(input: {
    resourceIdentifier: string;
    awayFrom: string;
    expiresIn: string;
    comment: string;
  }): Promise<{ shift: ZonalShift; started: boolean }> {
    const active = await this.active(input.resourceIdentifier);
    const same = active.find((s) => s.awayFrom === input.awayFrom);
    if (same) return { shift: await this.update(same.zonalShiftId, { expiresIn: input.expiresIn, comment: input.comment }), started: false };
    const other = active[0];
    if (other)
      throw new ZonalShiftError(
        'ConflictException',
        409,
        `${input.resourceIdentifier} is already shifted away from ${other.awayFrom} (${other.zonalShiftId}, until ${other.expiryTime.toISOString()}); a resource takes one zonal shift at a time: undrain ${other.awayFrom} first`,
        'SimultaneousZonalShiftsConflict',
      );
    return { shift: await this.start(input), started: true };
  }

  /** Cancels the resource's active shifts away from `awayFrom`; returns the ones cancelled. */
  public async cancelAway(resourceIdentifier: string, awayFrom: string): Promise<ZonalShift[]> {
    const cancelled: ZonalShift[] = [];
    for (const shift of (await this.active(resourceIdentifier)).filter((s) => s.awayFrom === awayFrom))
      cancelled.push(await this.cancel(shift.zonalShiftId));
    return cancelled;
  }
}
