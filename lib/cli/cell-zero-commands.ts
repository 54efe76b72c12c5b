import { Command } from 'commander';
import { Pool } from 'pg';
import { ContractGap, contractGaps, readSchemaFacts, SchemaFacts } from '../moves/schema-contract';
import { CliError, CliIo, formatTable, json } from './io';

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
    .option('--url <url>', 'postgres://USER:PASSWORD@HOST:PORT/DATABASE (default: the PGHOST, PGPORT, PGDATABASE, PGUSER and PGPASSWORD environment variables)')
    .option('--sql', 'print the SQL that adds what is missing, as one script')
    .option('--json', 'print the findings as JSON')
    .action(async (flags: { url?: string; sql?: boolean; json?: boolean }) => {
      const pool = new Pool({ ...(flags.url ? { connectionString: flags.url } : {}), max: 1, connectionTimeoutMillis: 10_000 });
      pool.on('error', () => undefined);
      let facts: SchemaFacts;
      try {
        facts = await readSchemaFacts(pool);
      } catch (error) {
        throw new CliError(`cannot read the database's schema: ${(error as Error).message}; give --url postgres://USER:PASSWORD@HOST:PORT/DATABASE or set PGHOST, PGDATABASE, PGUSER, PGPASSWORD`);
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
        io.out(`movable-schema contract: ${facts.tables.length} tables, ${meeting} meet it${failing.has(null) ? ', the database lacks its bookkeeping' : ''}\n`);
        io.out(formatTable(['table', 'status', 'missing'], rows(facts, gaps)));
        if (gaps.length > 0) io.out(`\n${required.length} required and ${gaps.length - required.length} advised changes; \`cellctl cell-zero check --sql\` prints the SQL that adds them (docs/cell-zero.md, "Make the database movable")\n`);
      }
      if (required.length > 0) throw new CliError('', 1);
    });
  return zero;
}
