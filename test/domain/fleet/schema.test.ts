import { FLEET_SCHEMA, FleetInput, generateFleet, fleetProblems, structureProblems, suggestion } from '../../../lib/domain/fleet';
import { exampleInput, validInput } from '../../support/fleet';

/** The example fleet with one edit applied to a plain-object copy (so typos can be written). */
function problemsAfter(edit: (input: Record<string, any>) => void, accounts?: Record<string, string>): string[] {
  const input = JSON.parse(JSON.stringify(accounts ? exampleInput() : validInput()));
  edit(input);
  return fleetProblems(input as FleetInput, accounts);
}

describe('structureProblems: unknown keys, missing fields and wrong types', () => {
  it('accepts the example fleet and a generated one (every key the types declare is in FLEET_SCHEMA: tsc checks it)', () => {
    expect(structureProblems(validInput())).toEqual([]);
    expect(structureProblems(generateFleet(validInput(), 20))).toEqual([]);
    expect(Object.keys(FLEET_SCHEMA)).toContain('pipeline');
  });

  const typos: [string, (i: Record<string, any>) => void, string][] = [
    [
      'top level',
      (i) => {
        i.pipline = i.pipeline;
        delete i.pipeline;
      },
      'unknown key `pipline`; did you mean `pipeline`?',
    ],
    [
      'alarms',
      (i) => {
        i.alarms.errorRatePercnt = 0.5;
      },
      'alarms: unknown key `errorRatePercnt`; did you mean `errorRatePercent`?',
    ],
    [
      'a cell',
      (i) => {
        i.cells[1].canery = true;
      },
      'cell `eu-1`: unknown key `canery`; did you mean `canary`?',
    ],
    [
      'a shape',
      (i) => {
        i.shapes.standard.memoryMb = 2048;
      },
      'shape `standard`: unknown key `memoryMb`; did you mean `memoryMiB`?',
    ],
    [
      'a shape database',
      (i) => {
        i.shapes.small.database.backupRetentionDay = 7;
      },
      'shape `small`: database: unknown key `backupRetentionDay`; did you mean `backupRetentionDays`?',
    ],
    [
      'the wave policy',
      (i) => {
        i.waves.bakeSeconds.canery = 60;
      },
      'waves.bakeSeconds: unknown key `canery`; did you mean `canary`?',
    ],
    [
      'the pipeline source',
      (i) => {
        i.pipeline.source.brnch = 'main';
      },
      'pipeline.source: unknown key `brnch`; did you mean `branch`?',
    ],
    [
      'the partition key',
      (i) => {
        i.partitionKey.nme = 'x';
      },
      'partitionKey: unknown key `nme`; did you mean `name`?',
    ],
    [
      'a router group',
      (i) => {
        i.router = { groups: [{ name: 'canary', task: 2 }, { name: 'main' }] };
      },
      'router.groups[0]: unknown key `task`; did you mean `tasks`?',
    ],
    [
      'a region',
      (i) => {
        i.regions['eu-west-1'].azs = ['eu-west-1a'];
      },
      'regions.eu-west-1: unknown key `azs`; known keys: availabilityZones',
    ],
  ];

  it.each(typos)('rejects a typo in %s with a did-you-mean, and nothing else', (_where, edit, message) => {
    expect(problemsAfter(edit)).toEqual([message]);
  });

  it('names a missing required field, once (no "unknown region `undefined`")', () => {
    expect(
      problemsAfter((i) => {
        delete i.cells[3].region;
      }),
    ).toEqual(['cell `eu-3`: missing `region`']);
    expect(
      problemsAfter((i) => {
        delete i.workload;
      }),
    ).toEqual(['missing `workload` (an object with image, containerPort, healthCheckPath)']);
    expect(
      problemsAfter((i) => {
        delete i.pipeline.source.branch;
      }),
    ).toEqual(['pipeline.source: missing `branch`']);
  });

  it('says a value has the wrong type instead of contradicting itself', () => {
    expect(
      problemsAfter((i) => {
        i.shapes.standard.cpu = '1024';
      }),
    ).toEqual(["shape `standard`: cpu must be a number, got the string '1024' (write 1024 without quotes)"]);
    expect(
      problemsAfter((i) => {
        i.cells[0].canary = 'yes';
      }),
    ).toEqual(["cell `canary-eu`: canary must be true or false, got the string 'yes'"]);
    expect(
      problemsAfter((i) => {
        i.cells = { eu: {} };
      }),
    ).toEqual(['cells must be a list, got an object']);
    expect(
      problemsAfter((i) => {
        i.shapes.small.compute = 'lambda';
      }),
    ).toEqual(["shape `small`: compute must be 'fargate' or 'ec2', got the string 'lambda'"]);
    expect(
      problemsAfter((i) => {
        i.partitionKey = { source: 'cookie', name: 'x' };
      }),
    ).toEqual(["partitionKey.source must be 'header' or 'path' or 'host' or 'jwt', got the string 'cookie'"]);
  });

  it('reports a duplicate cell id as one problem, not also as an account or range clash', () => {
    // Accounts from the accounts file are keyed by id, so the copy would get the same account.
    const accounts = Object.fromEntries(exampleInput().cells.map((c, n) => [c.id, String(555555555550 + n)]));
    expect(
      problemsAfter((i) => {
        i.cells.push({ ...i.cells[2] });
      }, accounts),
    ).toEqual(['cell `eu-2`: duplicate id (cells[8]); every cell id must be unique']);
  });

  it('names cells.accounts.json when an account recorded there is wrong', () => {
    const accounts = Object.fromEntries(exampleInput().cells.map((c, n) => [c.id, String(555555555550 + n)]));
    expect(problemsAfter(() => undefined, { ...accounts, 'eu-1': '12345' })).toEqual([
      'cell `eu-1`: account `12345` (cells.accounts.json) is not a 12-digit AWS account id',
    ]);
    expect(problemsAfter(() => undefined, { ...accounts, 'eu-1': accounts['eu-2'] })).toEqual([
      "cell `eu-2`: account 555555555552 (cells.accounts.json) is already cell `eu-1`'s; cells share no account",
    ]);
  });

  it('suggests the closest key, or lists the known ones when nothing is close', () => {
    expect(suggestion('pipline', ['pipeline', 'app'])).toBe('; did you mean `pipeline`?');
    expect(suggestion('zzzzzz', ['pipeline', 'app'])).toBe('; known keys: pipeline, app');
  });
});
