/**
 * Capacity: what cells carry, judged against what their shape was tested at. Pure types, no CDK,
 * no AWS SDK.
 */
import { CellSignalReadings } from './signals';

/** One tenant's measured request rate on its cell. */
export interface TenantLoad {
  readonly tenant: string;
  /** Requests per second now (the last period measured). */
  readonly rps: number;
  /** Highest requests per second in the window. @default rps */
  readonly peakRps?: number;
}

/** What was measured for one cell over a window. */
export interface CellLoad {
  readonly cell: string;
  /** Requests per second in the last period with data; 0 without data. */
  readonly currentRps: number;
  /** Highest requests per second in the window. */
  readonly peakRps: number;
  /** Tenants that sent requests in the window. */
  readonly activeTenants: number;
  /** The busiest tenants, busiest first (a router reports only its top few). */
  readonly topTenants: readonly TenantLoad[];
  /** Periods of the window without data (a router that did not report, a metric missing). */
  readonly missingPeriods?: number;
  /** The cell's own signals (AWS: CloudWatch in the cell's account). @default - not read (the local fleet) */
  readonly signals?: CellSignalReadings;
  /** Why the cell's own signals could not be read (one line). @default - they were, or were not asked for */
  readonly signalsError?: string;
}

/** What a cell is judged against: its shape's tested limits and the fleet's settings. */
export interface CellLimits {
  readonly cell: string;
  readonly region: string;
  readonly shape: string;
  readonly state: 'active' | 'draining' | 'quarantine';
  /** Sustained requests per second the shape was tested at. */
  readonly testedRps: number;
  readonly maxTenants: number;
  /** Availability Zones the cell's tasks are spread across. */
  readonly zones: number;
  /** The canary cell takes every change first and only internal tenants: never a move's or a placement's target. @default false */
  readonly canary?: boolean;
  /** The tier it serves: placement and rebalancing keep a tenant among its tier's cells. @default settings.defaultTier */
  readonly tier?: string;
  /** The one tenant it serves: never another's placement or move target. @default - shared */
  readonly dedicatedTo?: string;
}

export interface CapacitySettings {
  /** Share of the tested rate cells are placed against (0 < x < 1). */
  readonly targetUtilisation: number;
  /** Empty cells kept for moves. */
  readonly spareCells: number;
  /** A tenant above this share of a cell's target rate is named as large. */
  readonly largeTenantShare: number;
  /** The tier of a cell that names none, and of a tenant placed without `tier`. @default 'general' */
  readonly defaultTier?: string;
}

/**
 * `ok`; `hot` above the target utilisation (the peak rate's share of the tested rate, the peak share
 * of the cell's maximum compute in use, or the peak CPU of its database); `full` above the tested
 * limit (rate or tenants).
 */
export type CellStatus = 'ok' | 'hot' | 'full';

/** What made a cell `hot` or `full`: its request rate, its tenants, or one of its CPU signals. */
export type StatusCause = 'rate' | 'tenants' | 'computeCpu' | 'databaseCpu';

/** One cell judged. Utilisations are shares of the tested rate (1 = at the tested limit). */
export interface CellCapacity {
  readonly cell: string;
  readonly region: string;
  readonly shape: string;
  readonly state: CellLimits['state'];
  readonly canary: boolean;
  /** Resolved: the settings' default tier when the cell names none. */
  readonly tier: string;
  readonly dedicatedTo?: string;
  readonly currentRps: number;
  readonly peakRps: number;
  readonly testedRps: number;
  /** The rate the cell is placed against: tested × target utilisation. */
  readonly targetRps: number;
  /** Peak rate over the tested rate. */
  readonly utilisation: number;
  readonly activeTenants: number;
  readonly maxTenants: number;
  readonly largestTenant?: { readonly tenant: string; readonly peakRps: number; readonly share: number };
  /** Peak rate over the tested rate of what is left after losing one zone of the cell's capacity. */
  readonly zoneLossUtilisation: number;
  readonly status: CellStatus;
  /** Every signal over its threshold for `status` (empty when ok). */
  readonly statusBy: readonly StatusCause[];
  readonly topTenants: readonly TenantLoad[];
  readonly missingPeriods: number;
  /** The cell's own signals, when read (AWS). */
  readonly signals?: CellSignalReadings;
  readonly signalsError?: string;
}

/** The fleet judged. */
export interface FleetCapacity {
  readonly cells: readonly CellCapacity[];
  readonly settings: CapacitySettings;
  /** Sum of the cells' peak rates. */
  readonly peakRps: number;
  /** Cells needed at the target for the measured peak, per shape, plus the spares. */
  readonly cellsNeeded: number;
  /** Cells that take new tenants today (state active). */
  readonly activeCells: number;
  /** Cells to add so the fleet has what it needs (0 when it has enough). */
  readonly cellsToAdd: number;
  /** Tenants whose own peak takes more than `largeTenantShare` of a cell's target rate. */
  readonly largeTenants: readonly { readonly tenant: string; readonly cell: string; readonly peakRps: number; readonly shareOfTarget: number }[];
}
