import type { AwsCredentialIdentity } from '@smithy/types';
import type { PriceListFetch, PriceQuery } from '../../domain/cost';
import { NodeSha256 } from './zonal-shift';

export interface PriceListClientOptions {
  /** @default the standard credential chain */
  readonly credentials?: AwsCredentialIdentity;
  /** @default AWS_ENDPOINT_URL_PRICING, else https://api.pricing.us-east-1.amazonaws.com (the API's own region) */
  readonly endpoint?: string;
  readonly timeoutMs?: number;
}

/**
 * `pricing:GetProducts` (AWS Price List Query API, JSON 1.1), every page: a read-only call any
 * principal with `pricing:GetProducts` may make, from any account.
 */
export function priceListFetch(o: PriceListClientOptions = {}): PriceListFetch {
  const endpoint = (o.endpoint ?? process.env.AWS_ENDPOINT_URL_PRICING ?? 'https://api.pricing.us-east-1.amazonaws.com').replace(/\/$/, '');
  const credentials = async (): Promise<AwsCredentialIdentity> => {
    if (o.credentials) return o.credentials;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
    const { defaultProvider } = require('@aws-sdk/credential-provider-node') as typeof import('@aws-sdk/credential-provider-node');
    return defaultProvider()();
  };
  return async (query: PriceQuery, region: string) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
    const { SignatureV4 } = require('@smithy/signature-v4') as typeof import('@smithy/signature-v4');
    // usagetype carries a region prefix outside us-east-1: the caller matches it on the answers.
    const filters = Object.entries({ ...query.filters, ...(query.global ? {} : { regionCode: region }) })
      .filter(([field]) => field !== 'usagetype')
      .map(([Field, Value]) => ({ Type: 'TERM_MATCH', Field, Value }));
    const items: string[] = [];
    let next: string | undefined;
    do {
      const url = new URL(endpoint);
      const body = JSON.stringify({
        ServiceCode: query.serviceCode,
        Filters: filters,
        FormatVersion: 'aws_v1',
        MaxResults: 100,
        ...(next ? { NextToken: next } : {}),
      });
      const signer = new SignatureV4({ service: 'pricing', region: 'us-east-1', credentials: await credentials(), sha256: NodeSha256 });
      const signed = await signer.sign({
        method: 'POST',
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port ? Number(url.port) : undefined,
        path: '/',
        headers: { host: url.host, 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AWSPriceListService.GetProducts' },
        body,
      });
      const response = await fetch(`${url.origin}/`, {
        method: 'POST',
        headers: signed.headers as Record<string, string>,
        body,
        signal: AbortSignal.timeout(o.timeoutMs ?? 20_000),
      });
      const answer = (await response.json().catch(() => ({}))) as { PriceList?: string[]; NextToken?: string; message?: string; __type?: string };
      if (!response.ok)
        throw new Error(
          `pricing:GetProducts ${query.serviceCode} in ${region}: HTTP ${response.status} ${answer.__type ?? ''} ${answer.message ?? ''}`.trim(),
        );
      items.push(...(answer.PriceList ?? []));
      next = answer.NextToken;
    } while (next);
    return items;
  };
}
