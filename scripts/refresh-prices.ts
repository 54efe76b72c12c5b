/**
 * Refreshes lib/domain/cost/prices-table.ts from the AWS Price List API (`pricing:GetProducts`; any
 * credentials allowed to call it): `npm run prices:refresh [-- --region R ...] [--dry-run]`. Every
 * region of the table by default; a region named that the table lacks is added with the first
 * region's price ids. A price the API does not answer keeps its entry and is listed. `cellctl cost`
 * itself never calls AWS. docs/cost.md, "Refreshing the prices".
 */
import * as fs from 'fs';
import * as path from 'path';
import * as prettier from 'prettier';
import { priceListFetch } from '../lib/adapters/aws';
import { PRICE_TABLE, priceTableProblems, refreshPriceTable } from '../lib/domain/cost';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const regions = args.flatMap((a, i) => (args[i - 1] === '--region' ? [a] : []));
  const dryRun = args.includes('--dry-run');
  const unknown = args.filter((a, i) => a !== '--dry-run' && a !== '--region' && args[i - 1] !== '--region');
  if (unknown.length) {
    process.stderr.write(`refresh-prices: unknown argument ${unknown.join(' ')} (use --region R, --dry-run)\n`);
    return 2;
  }
  const today = new Date().toISOString().slice(0, 10);
  const result = await refreshPriceTable(PRICE_TABLE, regions.length ? regions : Object.keys(PRICE_TABLE.prices), priceListFetch(), today);
  for (const c of result.changed) process.stdout.write(`changed ${c}\n`);
  for (const k of result.kept) process.stdout.write(`kept ${k}\n`);
  const problems = priceTableProblems(result.table);
  if (problems.length) {
    process.stderr.write(`refresh-prices: the refreshed table is not valid, nothing written:\n  - ${problems.join('\n  - ')}\n`);
    return 1;
  }
  if (dryRun) return 0;
  // A TypeScript module (a JSON file would not reach the compiled package), written as prettier writes it.
  const file = path.join(__dirname, '..', 'lib', 'domain', 'cost', 'prices-table.ts');
  const header = fs.readFileSync(file, 'utf8').split('export const')[0];
  const text = await prettier.format(`${header}export const PRICE_TABLE_DATA: unknown = ${JSON.stringify(result.table, null, 2)};\n`, {
    ...(await prettier.resolveConfig(file)),
    filepath: file,
  });
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}: ${result.changed.length} changed, ${result.kept.length} kept\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`refresh-prices: ${error.message}\n`);
    process.exit(1);
  },
);
