import { DEPLOYMENT_WINDOW_EXAMPLE, deploymentWindowProblems, fleetProblems } from '../../../lib/domain/fleet';
import { exampleFleet, validInput } from '../../support/fleet';

describe('deploymentWindowProblems (CodePipeline DeploymentWindow rule: Quartz-style, seconds first)', () => {
  it.each([
    DEPLOYMENT_WINDOW_EXAMPLE,
    '* * 8-16 ? * MON-THU',
    '* 0/15 9-17 ? * 2-6',
    '* * * L * ? *',
    '* * 8 ? * 6L',
    '* * 8 ? * MON#2',
    '* * 22-23,0-5 ? JAN-NOV SAT,SUN 2026-2030',
  ])('accepts `%s`', (cron) => {
    expect(deploymentWindowProblems(cron)).toEqual([]);
  });

  it('rejects an EventBridge cron(...) and names the window expression to write instead', () => {
    expect(deploymentWindowProblems('cron(0 8-16 ? * MON-THU *)')).toEqual([
      expect.stringMatching(
        /is an EventBridge cron\(\.\.\.\); CodePipeline expects a DeploymentWindow expression: 6 fields and an optional year, seconds first.*write `\* \* 8-16 \? \* MON-THU \*`$/,
      ),
    ]);
  });

  it.each<[string, RegExp]>([
    ['0 8-16 ? * MON-THU *', /seconds `0` must be `\*` \(the first field is seconds; minutes come second\)/],
    ['* * 8-16 ? *', /has 5 field\(s\); expected a DeploymentWindow expression/],
    ['* * 8-16 ? * MON-THU * *', /has 8 field\(s\)/],
    ['* * 24 ? * MON', /hours `24`: 24 is outside 0-23/],
    ['* 60 8 ? * MON', /minutes `60`: 60 is outside 0-59/],
    ['* * 8 ? FOO MON', /month `FOO`: `FOO` is not one of JAN/],
    ['* * 8 ? * MON-XYZ', /day-of-week `MON-XYZ`: `XYZ` is not one of SUN/],
    ['* * 8-16 * * MON-THU', /exactly one of day-of-month `\*` and day-of-week `MON-THU` must be `\?`/],
    ['* * 8 ? * 1 1969', /year `1969`: 1969 is outside 1970-2199/],
  ])('rejects `%s`', (cron, message) => {
    expect(deploymentWindowProblems(cron)).toEqual(expect.arrayContaining([expect.stringMatching(message)]));
  });
});

describe('fleet validation of pipeline.deploymentWindow', () => {
  const withWindow = (cron: string) => fleetProblems({ ...validInput(), pipeline: { ...validInput().pipeline!, deploymentWindow: { cron } } });

  it('ships an example window in the DeploymentWindow format', () => {
    expect(exampleFleet().pipeline!.deploymentWindow!.cron).toBe(DEPLOYMENT_WINDOW_EXAMPLE);
    expect(withWindow(DEPLOYMENT_WINDOW_EXAMPLE)).toEqual([]);
  });

  it('refuses the EventBridge form, saying what to write', () => {
    expect(withWindow('cron(0 8-16 ? * MON-THU *)')).toEqual([
      expect.stringMatching(
        /^pipeline\.deploymentWindow\.cron: `cron\(0 8-16 \? \* MON-THU \*\)` is an EventBridge cron.*`\* \* 8-16 \? \* MON-THU \*`$/,
      ),
    ]);
  });

  it('refuses a field-shifted expression (minutes first)', () => {
    expect(withWindow('0 8-16 ? * MON-THU *')).toEqual(
      expect.arrayContaining([expect.stringMatching(/^pipeline\.deploymentWindow\.cron: .*seconds `0` must be `\*`/)]),
    );
  });
});
