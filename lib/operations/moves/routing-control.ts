import * as fs from 'fs';
import { writeFileAtomic } from '../../domain/files/atomic-write';
import { MappingDocument } from '../../domain/mapping/types';
import { formatProblems, parseMapping } from '../../domain/mapping/validate';
import { Clock, MoveError } from '../../domain/moves/types';

/**
 * How a move changes routing: read the current mapping, publish a new version to every router
 * group, and wait until every router serves it (routers report the version they serve).
 */
export interface RoutingControl {
  readonly description: string;
  read(): Promise<MappingDocument>;
  /** Publishes `doc`, which must replace exactly version `previous` (else someone else published). */
  publish(doc: MappingDocument, previous: number): Promise<void>;
  /** Resolves once every router serves `version` or newer; throws after the timeout naming the laggards. */
  waitApplied(version: number): Promise<void>;
}

/** Reports, per router (group), the mapping version it serves; undefined when it did not answer. */
export type VersionProbe = () => Promise<Readonly<Record<string, number | undefined>>>;

/**
 * The local fleet: the mapping is a file that the local routers watch (`cellctl router local`,
 * `cellctl fleet local`). Publishing is an atomic replace checked against the version read.
 */
export class FileRoutingControl implements RoutingControl {
  public readonly description: string;

  constructor(
    private readonly file: string,
    private readonly probe: VersionProbe,
    private readonly clock: Clock,
    private readonly timeoutMs = 30_000,
  ) {
    this.description = file;
  }

  public async read(): Promise<MappingDocument> {
    const parsed = parseMapping(fs.readFileSync(this.file, 'utf8'));
    if (!parsed.ok) throw new MoveError(`${this.file} is not a valid mapping:\n${formatProblems(parsed.problems)}`);
    return parsed.document;
  }

  public async publish(doc: MappingDocument, previous: number): Promise<void> {
    const current = await this.read();
    if (current.version !== previous) {
      throw new MoveError(
        `${this.file} went from v${previous} to v${current.version} while the move was changing it; run the move again (\`cellctl move resume\`)`,
      );
    }
    const parsed = parseMapping(JSON.stringify(doc), { previousVersion: previous });
    if (!parsed.ok) throw new MoveError(`the move would write an invalid mapping; nothing written:\n${formatProblems(parsed.problems)}`);
    writeFileAtomic(this.file, `${JSON.stringify(doc, null, 2)}\n`);
  }

  public async waitApplied(version: number): Promise<void> {
    const deadline = this.clock.now().getTime() + this.timeoutMs;
    for (;;) {
      const served = await this.probe().catch(() => ({}) as Record<string, number | undefined>);
      const lagging = Object.entries(served).filter(([, v]) => v === undefined || v < version);
      if (Object.keys(served).length > 0 && lagging.length === 0) return;
      if (this.clock.now().getTime() > deadline) {
        const names =
          Object.keys(served).length === 0
            ? 'no router answered'
            : lagging.map(([r, v]) => `${r} serves ${v === undefined ? 'nothing' : `v${v}`}`).join(', ');
        throw new MoveError(
          `routers did not apply mapping v${version} within ${this.timeoutMs / 1000} s (${names}); check them, then \`cellctl move resume\``,
        );
      }
      await this.clock.sleep(50);
    }
  }
}
