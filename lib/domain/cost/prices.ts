import { PRICE_TABLE_DATA as TABLE } from './prices-table';

/** One price of the table: what a unit costs in one region, where it was read and when. */
export interface Price {
  readonly usd: number;
  /** What one unit is: `hour`, `GB processed`, `key-month`, … */
  readonly unit: string;
  /** The AWS pricing page (or Price List API offer) the figure comes from. */
  readonly source: string;
  /** The day the figure was read (YYYY-MM-DD). */
  readonly asOf: string;
  /** `entered` by hand from the page, or read from the `price-list-api` by scripts/refresh-prices.ts. */
  readonly method: 'entered' | 'price-list-api';
}

/** The table in lib/domain/cost/prices-table.ts: on-demand list prices by region and price id. */
export interface PriceTable {
  readonly schemaVersion: 1;
  readonly currency: 'USD';
  /** Hours in the month every hourly price is multiplied by (AWS's calculator uses 730). */
  readonly hoursPerMonth: number;
  readonly note?: string;
  readonly prices: Readonly<Record<string, Readonly<Record<string, Price>>>>;
}

/** A price the table does not hold: names the region and price id, and how to add it. */
export class MissingPriceError extends Error {
  constructor(
    public readonly region: string,
    public readonly priceId: string,
    public readonly what: string,
  ) {
    super(
      `no price for ${priceId} in ${region} (${what}): add it to lib/domain/cost/prices-table.ts ` +
        `(\`npm run prices:refresh -- --region ${region}\` reads it from the AWS Price List API; docs/cost.md)`,
    );
    this.name = 'MissingPriceError';
  }
}

const ID = /^[a-z0-9-]+(:[a-z0-9.-]+)*$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** Every problem of a price table, each naming the entry; empty when it is valid. */
export function priceTableProblems(table: unknown): string[] {
  const t = table as Partial<PriceTable> | undefined;
  if (!t || typeof t !== 'object') return ['the price table is not an object'];
  const problems: string[] = [];
  if (t.schemaVersion !== 1) problems.push(`schemaVersion is ${String(t.schemaVersion)}; this version reads 1`);
  if (t.currency !== 'USD') problems.push(`currency is ${String(t.currency)}; prices are in USD`);
  if (typeof t.hoursPerMonth !== 'number' || t.hoursPerMonth < 672 || t.hoursPerMonth > 744)
    problems.push('hoursPerMonth must be between 672 and 744 (730 is the usual)');
  for (const [region, prices] of Object.entries(t.prices ?? {})) {
    for (const [id, p] of Object.entries(prices)) {
      const at = `prices.${region}.${id}`;
      if (!ID.test(id)) problems.push(`${at}: a price id is lowercase words joined by - and :`);
      if (typeof p.usd !== 'number' || !Number.isFinite(p.usd) || p.usd < 0) problems.push(`${at}.usd must be a number of dollars, 0 or more`);
      if (!p.unit) problems.push(`${at}.unit must say what one unit is`);
      if (typeof p.source !== 'string' || !/^https:\/\/\S+$/.test(p.source))
        problems.push(`${at}.source must be the https address the price was read from`);
      if (typeof p.asOf !== 'string' || !DAY.test(p.asOf) || Number.isNaN(Date.parse(p.asOf)))
        problems.push(`${at}.asOf must be the day it was read, YYYY-MM-DD`);
      if (p.method !== 'entered' && p.method !== 'price-list-api') problems.push(`${at}.method must be entered or price-list-api`);
    }
  }
  if (Object.keys(t.prices ?? {}).length === 0) problems.push('prices holds no region');
  return problems;
}

/** The repository's price table, checked once. */
export const PRICE_TABLE: PriceTable = (() => {
  const problems = priceTableProblems(TABLE);
  if (problems.length) throw new Error(`lib/domain/cost/prices-table.ts is not a valid price table:\n  - ${problems.join('\n  - ')}`);
  return TABLE as PriceTable;
})();

/** Looks prices up in one table; a missing one throws MissingPriceError. */
export class Prices {
  constructor(public readonly table: PriceTable = PRICE_TABLE) {}

  public get hoursPerMonth(): number {
    return this.table.hoursPerMonth;
  }

  public has(region: string, id: string): boolean {
    return this.table.prices[region]?.[id] !== undefined;
  }

  public get(region: string, id: string, what: string): Price {
    const price = this.table.prices[region]?.[id];
    if (!price) throw new MissingPriceError(region, id, what);
    return price;
  }

  public regions(): string[] {
    return Object.keys(this.table.prices);
  }
}
