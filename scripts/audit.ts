/**
 * npm run audit [-- --json] [-- --report FILE.html]: AwsSolutions and CellIsolation (the synth
 * gates), AWS Control Tower proactive controls (gated here) and NIST 800-53 rev 5 (advisory) over
 * every stack of the fleet: findings per pack and rule, open vs acknowledged. Exits 1 on any open
 * finding of a gating pack.
 */
import * as fs from 'fs';
import { auditFleet } from '../lib/app';
import { failingPacks, formatText, renderHtml } from '../lib/app/audit';
import { FleetConfigError, loadFleet } from '../lib/domain/fleet';
import { progressOn, writeFileAtomic } from '../lib/domain/files';

function main(argv: readonly string[]): number {
  const reportAt = argv.indexOf('--report');
  const reportFile = reportAt >= 0 ? argv[reportAt + 1] : undefined;
  if (reportAt >= 0 && (!reportFile || reportFile.startsWith('--'))) {
    process.stderr.write('--report needs a file name, e.g. npm run audit -- --report audit.html\n');
    return 2;
  }
  const fleet = loadFleet(process.env.CELLS_CONFIG ?? 'cells.config.ts');
  // Steps on a terminal (stderr), none with --json or in a pipe.
  const report = auditFleet(fleet, { progress: progressOn(process.stderr, { quiet: argv.includes('--json') }) });
  if (reportFile) {
    writeFileAtomic(reportFile, renderHtml(report));
    process.stderr.write(`wrote ${reportFile} (${fs.statSync(reportFile).size} bytes)\n`);
  }
  process.stdout.write(argv.includes('--json') ? `${JSON.stringify(report, null, 2)}\n` : formatText(report));
  const failing = failingPacks(report);
  if (failing.length > 0) {
    process.stderr.write(`Open findings in ${failing.join(', ')}: fix them or acknowledge them on the narrowest construct with a reason.\n`);
    return 1;
  }
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  if (error instanceof FleetConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
