import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { Pool } from 'pg';
import { DEFAULT_MAX_MOVED_SHARE, removeCell, routesText, routesTo } from '../domain/mapping';
import { ContractGap, contractGaps, readSchemaFacts, SchemaFacts, tenantsLeft } from '../operations/moves/schema-contract';
import { fleetFrom } from './context';
import { CliError, CliIo, formatTable, json } from './io';
import { readMappingFile, runChange } from './mapping-commands';
import { DEFAULT_LOCAL_STATE_DIR } from './move-commands';

/** One row per table: what it lacks, required first. */
function rows(facts: SchemaFacts, gaps: readonly ContractGap[]): string[][] {
  const tables: (string | null)[] = [...(gaps.some((g) => g.table === null) ? [null] : []), ...facts.tables.map((t) => t.name)];
  return tables.map((table) => {
    const own = gaps.filter((g) => g.table === table);
    const required = own.filter((g) => g.level === 'required');
    const status = required.length > 0 ? 'missing' : own.length > 0 ? 'advice' : 'ok';
    return [table ?? '(database)', status, own.map((g) => `${g.missing}${g.level === 'advice' ? ' (advised)' : ''}`).join('; ') || '-'];
  });
}

/** The fixes as one script, in order: bookkeeping first, then each table's. */
function script(gaps: readonly ContractGap[]): string {
  return gaps.map((g) => `-- ${g.table ?? '(database)'}: ${g.missing}${g.level === 'advice' ? ' (advised)' : ''}: ${g.why}\n${g.fix}\n`).join('\n');
}

/** `cellctl cell-zero`: adopting an existing stack as cell zero (docs/cell-zero.md). */
export function cellZeroCommand(io: CliIo): Command {
  const zero = new Command('cell-zero').description('adopt an existing stack as cell zero: check its database before tenants move out');
  zero
    .command('check')
    .description('check an existing PostgreSQL database against the movable-schema contract: per table, what is missing and the SQL that adds it')
    .option(
      '--url <url>',
      'postgres://USER:PASSWORD@HOST:PORT/DATABASE (default: the PGHOST, PGPORT, PGDATABASE, PGUSER and PGPASSWORD environment variables)',
    )
    .option('--sql', 'print the SQL that adds what is missing, as one script')
    .option('--json', 'print the findings as JSON')
    .action(async (flags: { url?: string; sql?: boolean; json?: boolean }) => {
      const pool = new Pool({ ...(flags.url ? { connectionString: flags.url } : {}), max: 1, connectionTimeoutMillis: 10_000 });
      pool.on('error', () => undefined);
      let facts: SchemaFacts;
      try {
        facts = await readSchemaFacts(pool);
      } catch (error) {
        throw new CliError(
          `cannot read the database's schema: ${(error as Error).message}; give --url postgres://USER:PASSWORD@HOST:PORT/DATABASE or set PGHOST, PGDATABASE, PGUSER, PGPASSWORD`,
        );
      } finally {
        await pool.end();
      }
      const gaps = contractGaps(facts);
      const required = gaps.filter((g) => g.level === 'required');
      if (flags.json) {
        io.out(json({ tables: facts.tables.map((t) => t.name), meetsContract: required.length === 0, gaps }));
      } else if (flags.sql) {
        io.out(gaps.length === 0 ? '-- nothing to add: the database meets the movable-schema contract\n' : script(gaps));
      } else {
        const failing = new Set(required.map((g) => g.table));
        const meeting = facts.tables.filter((t) => !failing.has(t.name)).length;
        io.out(
          `movable-schema contract: ${facts.tables.length} tables, ${meeting} meet it${failing.has(null) ? ', the database lacks its bookkeeping' : ''}\n`,
        );
        io.out(formatTable(['table', 'status', 'missing'], rows(facts, gaps)));
        if (gaps.length > 0)
          io.out(
            `\n${required.length} required and ${gaps.length - required.length} advised changes; \`cellctl cell-zero check --sql\` prints the SQL that adds them (docs/cell-zero.md, "Make the database movable")\n`,
          );
      }
      if (required.length > 0) throw new CliError('', 1);
    });

  zero
    .command('retire')
    .description(
      'say that cell zero serves nothing (no bucket, no pin or prefix, no tenant left in its database) and remove it from the mapping; refused, naming what still routes there, while anything does',
    )
    .option('--mapping <file>', "the mapping document (with --local: the local fleet's)")
    .option('--out <file>', 'where to write the new document (default: --mapping, in place)')
    .option('--id <id>', "cell zero's id (default: the local fleet's, else the config's cellZero.id)")
    .option('--url <url>', "cell zero's database, postgres://USER:PASSWORD@HOST:PORT/DATABASE (with --local: from the local fleet)")
    .option('--local', 'the running local fleet (`cellctl fleet local --cell-zero`)')
    .option('--state-dir <dir>', "with --local: the local fleet's state directory", DEFAULT_LOCAL_STATE_DIR)
    .option('--config <file>', 'fleet config', 'cells.config.ts')
    .option('--json', 'print the result as JSON')
    .action(
      async (flags: {
        mapping?: string;
        out?: string;
        id?: string;
        url?: string;
        local?: boolean;
        stateDir: string;
        config: string;
        json?: boolean;
      }) => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
        const { readFleetFile } = require('../operations/local-fleet') as typeof import('../operations/local-fleet');
        const local = flags.local ? readFleetFile(flags.stateDir) : undefined;
        if (flags.local && !local)
          throw new CliError(
            `${path.join(flags.stateDir, 'fleet.json')} not found: start the local fleet (\`cellctl fleet local --cell-zero\`), or pass --state-dir DIR where it keeps its state`,
          );
        const id = flags.id ?? local?.cellZero ?? (fs.existsSync(flags.config) ? fleetFrom(flags.config).cellZero?.id : undefined);
        if (!id)
          throw new CliError(`no cell zero to retire: give --id ID (the local fleet in ${flags.stateDir} and ${flags.config} declare none)`, 2);
        const mappingFile = flags.mapping ?? local?.mappingFile;
        if (!mappingFile) throw new CliError('no mapping document: give --mapping FILE (or --local)', 2);
        const url = flags.url ?? local?.cells.find((c) => c.id === id)?.database.url;
        if (!url)
          throw new CliError(
            `no database for cell zero ${id}: give --url postgres://USER:PASSWORD@HOST:PORT/DATABASE (its tenants must all have moved out)`,
            2,
          );
        const doc = readMappingFile(mappingFile);
        if (!doc.cells[id])
          throw new CliError(`cell zero ${id} is not in ${mappingFile} (cells: ${Object.keys(doc.cells).join(', ')}): nothing to retire`);
        const pool = new Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 10_000 });
        pool.on('error', () => undefined);
        let tenants: string[];
        try {
          tenants = await tenantsLeft(pool, doc.bucketCount);
        } catch (error) {
          throw new CliError(
            `cannot read cell zero ${id}'s database: ${(error as Error).message}; give --url postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
          );
        } finally {
          await pool.end();
        }
        const routes = routesText(routesTo(doc, id));
        const left =
          tenants.length > 0
            ? `${tenants.length} tenant${tenants.length === 1 ? '' : 's'} still in its database (${tenants.slice(0, 5).join(', ')}${tenants.length > 5 ? ', …' : ''})`
            : undefined;
        if (routes || left) {
          throw new CliError(
            `cell zero ${id} still serves: ${[routes ? `${routes} route to it` : undefined, left].filter(Boolean).join('; ')}; move them out first (\`cellctl move tenant|buckets|plan\`, docs/cell-zero.md)`,
          );
        }
        if (!flags.json) io.out(`cell zero ${id} serves nothing: no bucket, no pin or prefix routes to it, no tenant is left in its database\n`);
        runChange(io, { mapping: mappingFile, out: flags.out, maxMove: String(DEFAULT_MAX_MOVED_SHARE * 100), json: flags.json }, (d, o) =>
          removeCell(d, id, o),
        );
        if (!flags.json && !local)
          io.out(
            `publish it (\`cellctl mapping publish\`), then remove cellZero from the fleet file: that removes the adoption stack and leaves the existing stack untouched\n`,
          );
      },
    );
  return zero;
}
