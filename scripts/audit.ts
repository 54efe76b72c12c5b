/**
 * npm run audit [-- --json]: AwsSolutions (the gate) and NIST 800-53 rev 5 (advisory) over every
 * stack of the fleet; prints findings per rule, open vs acknowledged. Exits 1 on any open
 * AwsSolutions finding, as synth does.
 */
import { App } from 'aws-cdk-lib';
import { AwsSolutionsChecks, NIST80053R5Checks } from 'cdk-nag';
import { addFleet, cdkJsonContext } from '../lib/app';
import { auditStacks, formatAudit } from '../lib/audit';
import { FleetConfigError, loadFleet } from '../lib/fleet';

function main(): number {
  const fleet = loadFleet(process.env.CELLS_CONFIG ?? 'cells.config.ts');
  const app = new App({ context: cdkJsonContext() });
  const { cells } = addFleet(app, fleet, { audit: false });
  const rows = [...auditStacks(new AwsSolutionsChecks(), cells), ...auditStacks(new NIST80053R5Checks(), cells)];
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ stacks: cells.length, rules: rows }, null, 2)}\n`);
  } else {
    process.stdout.write(`Audited ${cells.length} stacks.\n${formatAudit(rows)}\n`);
  }
  const gate = rows.filter((r) => r.pack === 'AwsSolutions' && r.open > 0);
  if (gate.length > 0) {
    process.stderr.write(`Open AwsSolutions findings: ${gate.map((r) => r.rule).join(', ')}; fix them or acknowledge them on the narrowest construct.\n`);
    return 1;
  }
  return 0;
}

try {
  process.exitCode = main();
} catch (error) {
  if (error instanceof FleetConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
