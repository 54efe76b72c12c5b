/** One `cdk bootstrap` per cell account and region, trusting the tooling account. */
export interface BootstrapCommand {
  readonly cell: string;
  readonly account: string;
  readonly region: string;
  readonly argv: readonly string[];
}

export function bootstrapCommands(
  cells: readonly { id: string; account: string; region: string }[],
  options: { toolingAccount: string; executionPolicyArn: string },
): BootstrapCommand[] {
  const seen = new Set<string>();
  const commands: BootstrapCommand[] = [];
  for (const cell of cells) {
    const environment = `aws://${cell.account}/${cell.region}`;
    if (seen.has(environment)) continue;
    seen.add(environment);
    commands.push({
      cell: cell.id,
      account: cell.account,
      region: cell.region,
      argv: ['cdk', 'bootstrap', environment, '--trust', options.toolingAccount, '--trust-for-lookup', options.toolingAccount,
        '--cloudformation-execution-policies', options.executionPolicyArn],
    });
  }
  return commands;
}
