/**
 * npm run lint:cfn [-- DIR]: cfn-lint over every template synth wrote to DIR (default cdk.out), nested
 * stacks and stage assemblies included. Prints each finding, open or acknowledged (by rule and
 * resource type, lib/app/audit/cfn-lint.ts), and exits 1 on any open one.
 */
import { cfnLintFindings, writtenTemplates } from '../lib/app/audit';

const dir = process.argv[2] ?? 'cdk.out';
const templates = writtenTemplates(dir);
if (templates.length === 0) {
  process.stderr.write(`${dir} holds no templates; run \`npx cdk synth\` first\n`);
  process.exit(2);
}
const findings = cfnLintFindings(templates);
const open = findings.filter((f) => !f.acknowledgement);
for (const f of open) process.stdout.write(`OPEN ${f.rule} ${f.stack} ${f.resource}: ${f.description}\n`);
const acknowledged = new Map<string, number>();
for (const f of findings.filter((x) => x.acknowledgement))
  acknowledged.set(f.acknowledgement!.at, (acknowledged.get(f.acknowledgement!.at) ?? 0) + 1);
for (const [at, n] of acknowledged) process.stdout.write(`acknowledged ${n} × ${at}\n`);
process.stdout.write(`cfn-lint: ${templates.length} templates, ${open.length} open, ${findings.length - open.length} acknowledged\n`);
process.exit(open.length > 0 ? 1 : 0);
