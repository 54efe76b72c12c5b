/**
 * Account ids that are examples, not anybody's accounts: the placeholders the sample fleet ships
 * with (`111111111111` tooling, `222222222222` router, `33333333333N` cells, so `npx cdk synth` works
 * offline) and the ones AWS documentation uses. `accounts bootstrap --run` refuses them: run against
 * the sample config it would otherwise try to assume roles in, and bootstrap, twelve real strangers'
 * account numbers (or fail one by one with AccessDenied).
 */
const DOCUMENTATION_IDS = new Set(['123456789012', '111122223333', '444455556666', '777788889999']);

/** Whether `id` is an example account id: one repeated digit (the last may differ), or a documentation id. */
export function isExampleAccountId(id: string): boolean {
  return DOCUMENTATION_IDS.has(id) || /^(\d)\1{10}\d$/.test(id);
}

/**
 * The example accounts among `environments`: how many, and a short list saying what the fleet uses
 * each for (cell accounts summarized when there are more than two: `8 cell accounts (333333333330 … 333333333337)`).
 */
export function exampleAccounts(environments: readonly { readonly account: string; readonly purposes: readonly string[] }[]): {
  count: number;
  summary: string;
} {
  const purposes = new Map<string, Set<string>>();
  for (const e of environments) {
    if (!isExampleAccountId(e.account)) continue;
    const set = purposes.get(e.account) ?? new Set<string>();
    e.purposes.forEach((p) => set.add(p));
    purposes.set(e.account, set);
  }
  const onlyCell = (set: Set<string>) => [...set].every((p) => p.startsWith('cell '));
  const cells = [...purposes].filter(([, set]) => onlyCell(set)).map(([account]) => account);
  const named = [...purposes]
    .filter(([account]) => cells.length <= 2 || !cells.includes(account))
    .map(([account, set]) => `${account} (${[...set].join(', ')})`);
  if (cells.length > 2) named.push(`${cells.length} cell accounts (${cells[0]} … ${cells[cells.length - 1]})`);
  return { count: purposes.size, summary: named.join(', ') };
}
