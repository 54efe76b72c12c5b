/**
 * Refreshing the price table from the AWS Price List API (scripts/refresh-prices.ts): the on-demand
 * figure read from a GetProducts item, the table rewritten with each answered price's offer and day,
 * an unanswered or ambiguous price kept and listed, and the signed, paged HTTP call.
 */
import * as http from 'http';
import { AddressInfo } from 'net';
import { priceListFetch } from '../../../lib/adapters/aws';
import { onDemandUsd, PRICE_TABLE, priceQuery, priceTableProblems, PriceQuery, refreshPriceTable } from '../../../lib/domain/cost';

/** A GetProducts PriceList entry as the API writes it (a JSON string), tiers from `beginRange`. */
const item = (tiers: readonly [begin: string, usd: string][], attributes: Record<string, string> = {}) =>
  JSON.stringify({
    product: { attributes },
    terms: {
      OnDemand: {
        'SKU.JRTCKXETXF': {
          priceDimensions: Object.fromEntries(
            tiers.map(([begin, usd], i) => [`SKU.JRTCKXETXF.${i}`, { beginRange: begin, unit: 'Hrs', pricePerUnit: { USD: usd } }]),
          ),
        },
      },
    },
  });

describe('a Price List item', () => {
  it('gives its first paid on-demand tier, past a free one', () => {
    expect(onDemandUsd(item([['0', '0.0450000000']]))).toBe(0.045);
    expect(
      onDemandUsd(
        item([
          ['1000000', '0.0000004000'],
          ['0', '0.0000000000'],
        ]),
      ),
    ).toBe(0.0000004);
    expect(onDemandUsd(JSON.stringify({ terms: {} }))).toBeUndefined();
  });

  it('has a query for every price id the table holds, the per-type ids included', () => {
    for (const id of Object.keys(PRICE_TABLE.prices['us-east-1'])) expect(priceQuery(id)).toBeDefined();
    expect(priceQuery('ec2-hour:m7g.large')).toMatchObject({
      serviceCode: 'AmazonEC2',
      filters: { instanceType: 'm7g.large', operatingSystem: 'Linux' },
    });
    expect(priceQuery('rds-hour:aurora-postgresql:db.r7g.xlarge')).toMatchObject({
      serviceCode: 'AmazonRDS',
      filters: { databaseEngine: 'Aurora PostgreSQL' },
    });
    expect(priceQuery('rds-hour:oracle-ee:db.r6i.large')).toBeUndefined();
  });
});

describe('refreshPriceTable', () => {
  it('rewrites answered prices with the offer and the day, keeps and lists the rest, and adds a region', async () => {
    const asked: string[] = [];
    const fetchPrices = async (q: PriceQuery, region: string) => {
      asked.push(`${region} ${q.serviceCode}`);
      // Answers carry the region's usage-type prefix; an answer of another usage type is not the price.
      const answer = (usd: string, usagetype = `CAN1-${q.filters.usagetype}`) => item([['0', usd]], { usagetype });
      if (q.filters.usagetype === 'NatGateway-Hours') return [answer('0.0520000000'), answer('0.0520000000', 'CAN1-NatGateway-Bytes')];
      if (q.filters.usagetype === 'KMS-Keys') return [answer('1.0000000000'), answer('1.5000000000')];
      if (q.filters.usagetype === 'Requests-Tier1') return [answer('0.0000004000')];
      return [];
    };
    const result = await refreshPriceTable(PRICE_TABLE, ['ca-central-1'], fetchPrices, '2027-01-15');
    const added = result.table.prices['ca-central-1'];
    expect(added['nat-gateway-hour']).toEqual({
      usd: 0.052,
      unit: PRICE_TABLE.prices['us-east-1']['nat-gateway-hour'].unit,
      source: 'https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/ca-central-1/index.json',
      asOf: '2027-01-15',
      method: 'price-list-api',
    });
    // A price per request becomes the table's price per million.
    expect(added['sqs-requests-million'].usd).toBe(0.4);
    expect(result.changed).toEqual(expect.arrayContaining(['ca-central-1 nat-gateway-hour: none → $0.052']));
    expect(result.kept).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^ca-central-1 kms-key-month: the API answered 2 different prices \(1, 1\.5\); the entry is kept$/),
      ]),
    );
    expect(result.kept).toEqual(expect.arrayContaining([expect.stringMatching(/^ca-central-1 alb-hour: the API answered no on-demand price/)]));
    // Regions not asked for are untouched; the new one asks for every id of the table.
    expect(result.table.prices['us-east-1']).toEqual(PRICE_TABLE.prices['us-east-1']);
    expect(asked).toHaveLength(Object.keys(PRICE_TABLE.prices['us-east-1']).length);
    // Prices the API did not answer are not in the new region: the table says which are missing.
    expect(added['alb-hour']).toBeUndefined();
    expect(priceTableProblems(result.table)).toEqual([]);
  });
});

describe('pricing:GetProducts over HTTP', () => {
  it('signs a JSON 1.1 call to AWSPriceListService.GetProducts with the region filter, and reads every page', async () => {
    const calls: { target?: string; auth?: string; body: Record<string, unknown> }[] = [];
    const server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        const body = JSON.parse(text) as Record<string, unknown>;
        calls.push({ target: req.headers['x-amz-target'] as string, auth: req.headers.authorization, body });
        res.setHeader('content-type', 'application/x-amz-json-1.1');
        res.end(
          JSON.stringify(body.NextToken ? { PriceList: [item([['0', '0.02']])] } : { PriceList: [item([['0', '0.01']])], NextToken: 'page-2' }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const fetchPrices = priceListFetch({
        endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' },
      });
      // usagetype has a region prefix outside us-east-1 (EUW1-VpcEndpoint-Hours): matched on the answers, not sent.
      const items = await fetchPrices(priceQuery('interface-endpoint-az-hour')!, 'eu-west-1');
      expect(items.map(onDemandUsd)).toEqual([0.01, 0.02]);
      expect(calls).toHaveLength(2);
      expect(calls[0].target).toBe('AWSPriceListService.GetProducts');
      expect(calls[0].auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE\/\d{8}\/us-east-1\/pricing\/aws4_request/);
      expect(calls[0].body).toMatchObject({
        ServiceCode: 'AmazonVPC',
        Filters: [{ Type: 'TERM_MATCH', Field: 'regionCode', Value: 'eu-west-1' }],
      });
      expect(calls[1].body.NextToken).toBe('page-2');
    } finally {
      server.close();
    }
  });
});
