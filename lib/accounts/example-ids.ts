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

/** The example accounts among `environments`, each once, with what the fleet uses it for. */
export function exampleAccounts(environments: readonly { readonly account: string; readonly purposes: readonly string[] }[]): string[] {
  const purposes = new Map<string, Set<string>>();
  for (const e of environments) {
    if (!isExampleAccountId(e.account)) continue;
    const set = purposes.get(e.account) ?? new Set<string>();
    e.purposes.forEach((p) => set.add(p));
    purposes.set(e.account, set);
  }
  return [...purposes].map(([account, set]) => `${account} (${[...set].join(', ')})`);
}
