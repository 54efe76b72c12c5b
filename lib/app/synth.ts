import { App } from 'aws-cdk-lib';
import { Progress } from '../domain/files';
import { CONFIG_FILE_NAME, FleetConfigError, loadFleet } from '../domain/fleet';
import { auditSummary, formatAuditSummary } from './audit-summary';
import { stampFleet } from './fleet-app';

export interface SynthFleetOptions {
  /**
   * The fleet file, relative to the working directory.
   * @default 'cells.config.ts'
   */
  readonly config?: string;
  /** Where the problems, a failure and the audit summary are written (stderr). */
  readonly err: (text: string) => void;
  /**
   * Makes the app to synthesize into, once the fleet has loaded.
   * @default an `App` with no props: its output folder and context from the CDK CLI's environment (`CDK_OUTDIR`, `CDK_CONTEXT_JSON`)
   */
  readonly app?: () => App;
  /**
   * Rethrows a failed synthesis with its stack trace instead of one line.
   * @default false
   */
  readonly debug?: boolean;
  /** Steps of the work on a terminal (bin/app.ts: progressOn(process.stderr)). @default none */
  readonly progress?: Progress;
}

/**
 * The CDK app's work (bin/app.ts, as `npx cdk synth` runs it): loads the fleet, stamps it into an
 * app, synthesizes it and ends with the audit summary. Returns the exit status: 1 for a config
 * problem (the list of problems, never a stack trace; no app is made, nothing is synthesized) or a
 * failed synthesis (one line), 0 otherwise.
 */
export function synthFleet(options: SynthFleetOptions): number {
  let fleet;
  const progress = options.progress;
  try {
    progress?.step(`loading ${options.config ?? CONFIG_FILE_NAME}`);
    fleet = loadFleet(options.config ?? CONFIG_FILE_NAME);
  } catch (error) {
    // A config problem is the operator's to fix: the list of problems, never a stack trace.
    progress?.finish();
    if (!(error instanceof FleetConfigError)) throw error;
    options.err(`${error.message}\n`);
    return 1;
  }
  const app = options.app?.() ?? new App();
  try {
    // With a `pipeline` section the cells are deployed by the pipeline's waves; without it, directly.
    progress?.step(`building ${fleet.cells.length} cells and ${Object.keys(fleet.regions).length} router regions`);
    stampFleet(app, fleet);
    // Synthesize here (not at exit) to end with the audit summary: what the gate checked and let pass.
    // A whole line: what the synthesis prints (bundling) follows it, not over it.
    progress?.finish(
      `built ${fleet.cells.length} cells and ${Object.keys(fleet.regions).length} router regions; synthesizing: bundling the functions, the audit gate, the AWS limit checks`,
    );
    app.synth();
  } catch (error) {
    progress?.finish();
    if (options.debug) throw error;
    // A failed audit gate has printed its report above; the stack trace would bury it.
    options.err(`synth failed: ${(error as Error).message.split('\n')[0]} (CELLS_DEBUG=1 shows the stack trace)\n`);
    return 1;
  }
  options.err(`${formatAuditSummary(auditSummary(app))}\n`);
  return 0;
}
