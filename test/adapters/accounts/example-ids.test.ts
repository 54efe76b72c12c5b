import { exampleAccounts, isExampleAccountId } from '../../../lib/adapters/accounts';

describe('example account ids', () => {
  it.each([
    ['111111111111', true],
    ['222222222222', true],
    ['333333333337', true],
    ['123456789012', true],
    ['111122223333', true],
    ['480523961127', false],
    ['333333333377', false],
    ['000000000001', true],
    ['12345678901', false],
  ])('%s is an example: %s', (id, expected) => {
    expect(isExampleAccountId(id)).toBe(expected);
  });

  it('summarizes the example accounts of a fleet, cells in one item', () => {
    const environments = [
      { account: '111111111111', purposes: ['tooling'] },
      { account: '222222222222', purposes: ['router'] },
      { account: '222222222222', purposes: ['router'] },
      ...['0', '1', '2'].map((n) => ({ account: `33333333333${n}`, purposes: [`cell c-${n}`] })),
      { account: '480523961127', purposes: ['cell real'] },
    ];
    expect(exampleAccounts(environments)).toEqual({
      count: 5,
      summary: '111111111111 (tooling), 222222222222 (router), 3 cell accounts (333333333330 … 333333333332)',
    });
    expect(exampleAccounts(environments.slice(0, 4))).toEqual({
      count: 3,
      summary: '111111111111 (tooling), 222222222222 (router), 333333333330 (cell c-0)',
    });
    expect(exampleAccounts([{ account: '480523961127', purposes: ['tooling'] }])).toEqual({ count: 0, summary: '' });
  });
});
