/**
 * A cell's own signals in AWS, next to the request rate the routers measure: the share of its
 * maximum compute in use, the CPU of its database, its database connections and the age of its
 * oldest work message. Each cell stack publishes which metrics they are (an SSM parameter,
 * `cellSignalsParameter`), built from the same metric objects its alarms and scaling use, so the
 * dimension values are those of the deployed resources; `cellctl capacity` reads the parameter and
 * the metrics through the cell's metrics reader role. Pure: no CDK, no AWS SDK.
 */

/** The signals, in the order they are shown. */
export const CELL_SIGNALS = ['computeCpu', 'databaseCpu', 'databaseConnections', 'queueAgeSeconds'] as const;
export type CellSignalName = (typeof CELL_SIGNALS)[number];

/** How each signal is named in the table, the page and the reasons for a status. */
export const SIGNAL_LABELS: Readonly<Record<CellSignalName, string>> = {
  computeCpu: 'compute used',
  databaseCpu: 'database CPU',
  databaseConnections: 'database connections',
  queueAgeSeconds: 'oldest work message',
};

/**
 * Signals in percent of capacity: above the fleet's target utilisation, the cell is `hot`. The
 * compute's is the share of its maximum compute in use (`computeReadingOf`), never the CPU
 * percentage of the tasks that run: those scale out at their CPU target, so their average sits at
 * that target under load whatever room the cell has left. The database does not scale out: its CPU
 * percentage is its utilisation.
 */
export const CPU_SIGNALS: readonly CellSignalName[] = ['computeCpu', 'databaseCpu'];

/** What the compute counts: Fargate tasks, or the EC2 instances of an Auto Scaling group. */
export type ComputeUnit = 'tasks' | 'instances';
const COMPUTE_UNITS: readonly ComputeUnit[] = ['tasks', 'instances'];

/** One CloudWatch metric as the cell stack publishes it. */
export interface PublishedMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  /** The statistic its alarm uses (`Average`, `Maximum`, ...). */
  readonly statistic: string;
}

/**
 * The compute's CPU (the average over what runs: the metric its scaling policy tracks) with what
 * turns it into a share of the most the cell may ever have: how many run, and the maximum.
 */
export interface PublishedCompute extends PublishedMetric {
  /** Tasks running (Fargate) or instances in service (EC2), one point a minute. */
  readonly running: PublishedMetric;
  /** The most tasks or instances the compute scales out to (its scaling's maximum capacity). */
  readonly maximum: number;
  readonly unit: ComputeUnit;
}

/** The value of a cell's signals parameter. */
export interface CellSignalsRecord {
  readonly schemaVersion: 2;
  readonly signals: Readonly<Partial<Record<Exclude<CellSignalName, 'computeCpu'>, PublishedMetric>> & { readonly computeCpu?: PublishedCompute }>;
}

/** One signal over the window. No period with data: `current` and `peak` are absent (missing, never 0). */
export interface SignalReading {
  /** The last whole period with data. */
  readonly current?: number;
  /** The highest whole period of the window. */
  readonly peak?: number;
  readonly missingPeriods: number;
}

/**
 * The compute over the window: `current` and `peak` are the share of its maximum compute in use, in
 * percent (average CPU × running / maximum), each with the CPU and count of its period. A period
 * without a CPU point or without a count is missing: the share is never guessed from one of them.
 */
export interface ComputeReading extends SignalReading {
  readonly maximum: number;
  readonly unit: ComputeUnit;
  /** Tasks or instances running in the peak's period, and their average CPU, percent. */
  readonly peakRunning?: number;
  readonly peakCpu?: number;
  readonly currentRunning?: number;
  readonly currentCpu?: number;
}

export type CellSignalReadings = Readonly<
  Partial<Record<Exclude<CellSignalName, 'computeCpu'>, SignalReading>> & { readonly computeCpu?: ComputeReading }
>;

/** One point per whole period: [period start (ms), value], in time order. */
export type PeriodPoints = readonly (readonly [number, number])[];

/**
 * The compute's reading from its CPU and running count per period: in each period with both, the
 * share of the maximum in use is CPU × running / maximum (2 of 10 tasks at 60% CPU use 12% of what
 * the cell may have; 9 of 10 at 70%, 63%). `periods` is how many periods the window holds.
 */
export function computeReadingOf(cpu: PeriodPoints, running: PeriodPoints, maximum: number, unit: ComputeUnit, periods: number): ComputeReading {
  const counts = new Map(running.map(([t, n]) => [t, n]));
  const joint = cpu.filter(([t]) => counts.has(t)).map(([t, c]) => ({ cpu: c, running: counts.get(t)!, used: (c * counts.get(t)!) / maximum }));
  if (joint.length === 0) return { missingPeriods: periods, maximum, unit };
  const last = joint[joint.length - 1];
  const peak = joint.reduce((a, b) => (b.used > a.used ? b : a));
  return {
    current: last.used,
    peak: peak.used,
    missingPeriods: periods - joint.length,
    maximum,
    unit,
    peakRunning: peak.running,
    peakCpu: peak.cpu,
    currentRunning: last.running,
    currentCpu: last.cpu,
  };
}

const count = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/**
 * A signal's peak with its unit (`72%`, `140`, `35 s`, the compute's `63% of max (9 of 10 tasks at
 * 70% CPU)`); undefined when no period had data (missing, never 0).
 */
export function signalPeakText(name: CellSignalName, reading: SignalReading | ComputeReading | undefined): string | undefined {
  if (reading?.peak === undefined) return undefined;
  if (name === 'computeCpu') {
    const c = reading as ComputeReading;
    return `${Math.round(c.peak!)}% of max (${count(c.peakRunning!)} of ${c.maximum} ${c.unit} at ${Math.round(c.peakCpu!)}% CPU)`;
  }
  if (name === 'queueAgeSeconds') return `${Math.round(reading.peak)} s`;
  if (name === 'databaseConnections') return String(Math.round(reading.peak));
  return `${Math.round(reading.peak)}%`;
}

const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const isMetric = (m: Partial<PublishedMetric> | null | undefined): boolean =>
  !!m &&
  isText(m.namespace) &&
  isText(m.metricName) &&
  isText(m.statistic) &&
  !!m.dimensions &&
  typeof m.dimensions === 'object' &&
  Object.values(m.dimensions).every(isText);

/**
 * The record in `text` (the parameter's value), checked: one line naming `where` and what is wrong
 * otherwise. Unknown signal names are refused (a newer cell stack than this cellctl: update cellctl).
 */
export function parseSignalsRecord(text: string, where: string): CellSignalsRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${where}: not JSON (${(error as Error).message}); redeploy the cell stack, which writes it`);
  }
  const record = value as { schemaVersion?: unknown; signals?: unknown };
  if (!record || typeof record !== 'object' || record.schemaVersion !== 2 || !record.signals || typeof record.signals !== 'object') {
    throw new Error(
      `${where}: not a signals record of schema 2 (${text.slice(0, 80)}); redeploy the cell stack with this version of the factory, or update cellctl`,
    );
  }
  for (const [name, metric] of Object.entries(record.signals as Record<string, unknown>)) {
    if (!(CELL_SIGNALS as readonly string[]).includes(name))
      throw new Error(`${where}: unknown signal \`${name}\` (known: ${CELL_SIGNALS.join(', ')}); update cellctl`);
    if (!isMetric(metric as Partial<PublishedMetric> | null)) {
      throw new Error(
        `${where}: signal \`${name}\` needs namespace, metricName, statistic and text dimensions (got ${JSON.stringify(metric)}); redeploy the cell stack`,
      );
    }
    if (name === 'computeCpu') {
      const c = metric as Partial<PublishedCompute>;
      if (!isMetric(c.running) || !Number.isInteger(c.maximum) || c.maximum! < 1 || !COMPUTE_UNITS.includes(c.unit as ComputeUnit)) {
        throw new Error(
          `${where}: signal \`computeCpu\` needs its running count (a metric), its maximum (a whole number of at least 1) and its unit (${COMPUTE_UNITS.join(' or ')}) (got ${JSON.stringify(metric)}); redeploy the cell stack`,
        );
      }
    }
  }
  return record as CellSignalsRecord;
}
