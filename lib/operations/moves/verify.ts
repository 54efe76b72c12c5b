import { CellData, RowHashes } from './cell-data';
import { MoveSubject, TableChecksums } from '../../domain/moves/types';

/** One side's row hashes: table → id → hash, as of that cell's row_version `upTo`. */
interface Side {
  upTo: string;
  readonly tables: Map<string, Map<string, string>>;
}

export interface VerifyResult {
  /** One line per table that differs, naming up to 5 ids; empty when both sides are equal. */
  readonly differences: string[];
  /** Row count and hash sum per table (the same numbers `CellData.checksums` computes). */
  readonly checksums: TableChecksums;
  /** Rows and deletes re-read under the freeze, per side. */
  readonly changed: { readonly source: number; readonly target: number };
}

/**
 * The verify of a move, made proportional to what changed instead of to the subject's size.
 *
 * Before the freeze, `start` reads every row hash of the subject on both sides (each at its own
 * row_version bound) and notes the ids whose hashes differ then. Under the freeze, `finish` re-reads
 * on each side only the rows whose row_version is above that side's bound and the ids deleted since
 * (tombstones), and compares those ids again. Every id not re-read is unchanged on both sides since
 * the first read, so it still matches or still differs as it did then; the move is verified when no
 * id differs. A target row changed by anything but the mover (the trigger gives it a new row_version)
 * or deleted (a tombstone) is re-read and caught; only a change that bypasses the row_version and
 * tombstone triggers would not be, and such a change would escape the catch-up copy as well.
 */
export class IncrementalVerify {
  private constructor(
    private readonly subject: MoveSubject,
    private readonly source: CellData,
    private readonly target: CellData,
    private readonly sides: { source: Side; target: Side },
    /** table → ids whose hashes differ between the sides. */
    private readonly mismatched: Map<string, Set<string>>,
  ) {}

  /** Undefined when a cell cannot list row hashes (the caller verifies with full checksums). */
  public static async start(subject: MoveSubject, source: CellData, target: CellData): Promise<IncrementalVerify | undefined> {
    if (!source.rowHashes || !target.rowHashes) return undefined;
    const [a, b] = await Promise.all([source.rowHashes(subject, '0'), target.rowHashes(subject, '0')]);
    const sides = {
      source: { upTo: a.upTo, tables: new Map<string, Map<string, string>>() },
      target: { upTo: b.upTo, tables: new Map<string, Map<string, string>>() },
    };
    const verify = new IncrementalVerify(subject, source, target, sides, new Map());
    verify.apply(sides.source, a);
    verify.apply(sides.target, b);
    verify.compare(
      new Set([...Object.keys(a.tables), ...Object.keys(b.tables)]),
      (table) => new Set([...(sides.source.tables.get(table)?.keys() ?? []), ...(sides.target.tables.get(table)?.keys() ?? [])]),
    );
    return verify;
  }

  /** Rows of the subject read by `start`, per side. */
  public get baseRows(): { source: number; target: number } {
    const count = (side: Side) => [...side.tables.values()].reduce((n, t) => n + t.size, 0);
    return { source: count(this.sides.source), target: count(this.sides.target) };
  }

  /** Re-reads what changed on each side since `start` (or the last `finish`) and compares it. */
  public async finish(): Promise<VerifyResult> {
    const [a, b] = await Promise.all([
      this.source.rowHashes!(this.subject, this.sides.source.upTo),
      this.target.rowHashes!(this.subject, this.sides.target.upTo),
    ]);
    this.apply(this.sides.source, a);
    this.apply(this.sides.target, b);
    const tables = new Set([
      ...Object.keys(a.tables),
      ...Object.keys(b.tables),
      ...this.sides.source.tables.keys(),
      ...this.sides.target.tables.keys(),
    ]);
    this.compare(tables, (table) => new Set([...(a.tables[table] ?? []).map(([id]) => id), ...(b.tables[table] ?? []).map(([id]) => id)]));
    const size = (h: RowHashes) => Object.values(h.tables).reduce((n, t) => n + t.length, 0);
    const differences: string[] = [];
    const checksums: Record<string, { rows: number; checksum: string }> = {};
    for (const table of [...tables].sort()) {
      const ids = [...(this.mismatched.get(table) ?? [])].sort();
      const src = this.sides.source.tables.get(table) ?? new Map<string, string>();
      const dst = this.sides.target.tables.get(table) ?? new Map<string, string>();
      if (ids.length > 0) {
        const shown = ids.slice(0, 5).map((id) => `${id} (${src.has(id) ? (dst.has(id) ? 'differs' : 'missing on target') : 'only on target'})`);
        differences.push(
          `${table}: ${ids.length} rows differ (source ${src.size} rows, target ${dst.size}): ${shown.join(', ')}${ids.length > 5 ? ', …' : ''}`,
        );
      }
      checksums[table] = { rows: src.size, checksum: [...src.values()].reduce((sum, h) => sum + BigInt(h), 0n).toString() };
    }
    return { differences, checksums, changed: { source: size(a), target: size(b) } };
  }

  private apply(side: Side, hashes: RowHashes): void {
    side.upTo = hashes.upTo;
    for (const [table, rows] of Object.entries(hashes.tables)) {
      let map = side.tables.get(table);
      if (!map) side.tables.set(table, (map = new Map()));
      for (const [id, hash] of rows) {
        if (hash === null) map.delete(id);
        else map.set(id, hash);
      }
    }
  }

  /** Compares `ids(table)` of every table again; the other ids keep their earlier verdict. */
  private compare(tables: Set<string>, ids: (table: string) => Set<string>): void {
    for (const table of tables) {
      const src = this.sides.source.tables.get(table);
      const dst = this.sides.target.tables.get(table);
      let bad = this.mismatched.get(table);
      for (const id of ids(table)) {
        if (src?.get(id) === dst?.get(id)) {
          bad?.delete(id);
        } else {
          if (!bad) this.mismatched.set(table, (bad = new Set()));
          bad.add(id);
        }
      }
    }
  }
}
