/**
 * A cell's own signals in AWS, next to the request rate the routers measure: the CPU of its compute
 * and of its database, its database connections and the age of its oldest work message. Each cell
 * stack publishes which metrics they are (an SSM parameter, `cellSignalsParameter`), built from the
 * same metric objects its alarms and scaling use, so the dimension values are those of the deployed
 * resources; `cellctl capacity` reads the parameter and the metrics through the cell's metrics reader
 * role. Pure: no CDK, no AWS SDK.
 */

/** The signals, in the order they are shown. */
export const CELL_SIGNALS = ['computeCpu', 'databaseCpu', 'databaseConnections', 'queueAgeSeconds'] as const;
export type CellSignalName = typeof CELL_SIGNALS[number];

/** How each signal is named in the table, the page and the reasons for a status. */
export const SIGNAL_LABELS: Readonly<Record<CellSignalName, string>> = {
  computeCpu: 'compute CPU',
  databaseCpu: 'database CPU',
  databaseConnections: 'database connections',
  queueAgeSeconds: 'oldest work message',
};

/** Signals in percent of capacity: above the fleet's target utilisation, the cell is `hot`. */
export const CPU_SIGNALS: readonly CellSignalName[] = ['computeCpu', 'databaseCpu'];

/** One CloudWatch metric as the cell stack publishes it. */
export interface PublishedMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  /** The statistic its alarm uses (`Average`, `Maximum`, ...). */
  readonly statistic: string;
}

/** The value of a cell's signals parameter. */
export interface CellSignalsRecord {
  readonly schemaVersion: 1;
  readonly signals: Readonly<Partial<Record<CellSignalName, PublishedMetric>>>;
}

/** One signal over the window. No period with data: `current` and `peak` are absent (missing, never 0). */
export interface SignalReading {
  /** The last whole period with data. */
  readonly current?: number;
  /** The highest whole period of the window. */
  readonly peak?: number;
  readonly missingPeriods: number;
}

export type CellSignalReadings = Readonly<Partial<Record<CellSignalName, SignalReading>>>;

/** A signal's peak with its unit (`72%`, `140`, `35 s`); undefined when no period had data (missing, never 0). */
export function signalPeakText(name: CellSignalName, reading: SignalReading | undefined): string | undefined {
  if (reading?.peak === undefined) return undefined;
  if (name === 'queueAgeSeconds') return `${Math.round(reading.peak)} s`;
  if (name === 'databaseConnections') return String(Math.round(reading.peak));
  return `${Math.round(reading.peak)}%`;
}

const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

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
  if (!record || typeof record !== 'object' || record.schemaVersion !== 1 || !record.signals || typeof record.signals !== 'object') {
    throw new Error(`${where}: not a signals record of schema 1 (${text.slice(0, 80)}); redeploy the cell stack with this version of the factory, or update cellctl`);
  }
  for (const [name, metric] of Object.entries(record.signals as Record<string, unknown>)) {
    if (!(CELL_SIGNALS as readonly string[]).includes(name)) throw new Error(`${where}: unknown signal \`${name}\` (known: ${CELL_SIGNALS.join(', ')}); update cellctl`);
    const m = metric as Partial<PublishedMetric> | null;
    const dimensionsOk = !!m && !!m.dimensions && typeof m.dimensions === 'object' && Object.values(m.dimensions).every(isText);
    if (!m || !isText(m.namespace) || !isText(m.metricName) || !isText(m.statistic) || !dimensionsOk) {
      throw new Error(`${where}: signal \`${name}\` needs namespace, metricName, statistic and text dimensions (got ${JSON.stringify(metric)}); redeploy the cell stack`);
    }
  }
  return record as CellSignalsRecord;
}
