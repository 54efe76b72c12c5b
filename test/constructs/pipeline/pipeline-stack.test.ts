import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Stack, Stage } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { addPipeline, isolationChecksPropsOf } from '../../../lib/app';
import { Fleet, generateFleet, resolveFleet } from '../../../lib/domain/fleet';
import {
  CDK_ASSETS_VERSION,
  assertNoOpenFindings,
  CFN_LINT_VERSION,
  PipelineStack,
  publishingTimeoutMinutes,
  STAGE_SCRIPTS_DIR,
  stageScripts,
} from '../../../lib/constructs/pipeline';
import { CellIsolationChecks } from '../../../lib/constructs/isolation';
import { planWaves } from '../../../lib/domain/waves';
import { fakeStackStatuses, runWithFakeAws } from '../../support/fake-aws';
import { cdkApp, exampleFleet, exampleInput, REPO_ROOT, smallExampleFleet } from '../../support/fleet';

interface CfnStage {
  Name: string;
  Actions: { Name: string; ActionTypeId: { Category: string; Provider: string }; Configuration?: Record<string, string>; RunOrder?: number }[];
  OnFailure?: unknown;
  BeforeEntry?: { Conditions: { Result: string; Rules: { RuleTypeId: { Provider: string }; Configuration: Record<string, string> }[] }[] };
}

/** Two stages per region, the canary cell's region first: the router stack and canary group, then the other groups. */
interface PolicyStatementJson {
  Action: unknown;
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}
/** A policy Resource as CloudFormation renders it, the partition as `aws`. */
const rendered = (r: unknown): string =>
  typeof r === 'string' ? r : (r as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : 'aws')).join('');
const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
/** Whether `statements` allow `sts:AssumeRole` on `arn`: a Resource (pattern) matches and the account is in its aws:ResourceAccount condition. */
function mayAssume(statements: readonly PolicyStatementJson[], arn: string): boolean {
  const account = arn.split(':')[4];
  return statements.some(
    (st) =>
      [st.Action].flat().includes('sts:AssumeRole') &&
      [st.Resource].flat().some((r) => glob(rendered(r)).test(arn)) &&
      Object.entries(st.Condition ?? {}).every(
        ([op, keys]) =>
          op === 'StringEquals' && Object.entries(keys).every(([key, values]) => key === 'aws:ResourceAccount' && [values].flat().includes(account)),
      ),
  );
}
/** Every statement of the policies attached to role `logicalId`. */
function statementsOfRole(all: readonly unknown[], logicalId: string): PolicyStatementJson[] {
  const policies = all as readonly { Properties: { Roles: unknown; PolicyDocument: { Statement: PolicyStatementJson[] } } }[];
  return policies.filter((p) => JSON.stringify(p.Properties.Roles).includes(logicalId)).flatMap((p) => p.Properties.PolicyDocument.Statement);
}

const ROUTER_STAGES = ['routers-eu-west-1-canary-group', 'routers-eu-west-1', 'routers-us-east-1-canary-group', 'routers-us-east-1'];

describe('PipelineStack on the example fleet', () => {
  let fleet: Fleet;
  let stack: PipelineStack;
  let stages: CfnStage[];
  let template: Template;
  /** The stage scripts the synth wrote into the assembly, by file name, and their folder. */
  let scripts: Record<string, string>;
  let scriptsDir: string;
  beforeAll(() => {
    fleet = exampleFleet();
    stack = addPipeline(cdkApp(), fleet, { audit: false });
    template = Template.fromStack(stack);
    scriptsDir = path.join(Stage.of(stack)!.outdir, STAGE_SCRIPTS_DIR);
    scripts = Object.fromEntries(fs.readdirSync(scriptsDir).map((f) => [f, fs.readFileSync(path.join(scriptsDir, f), 'utf8')]));
    const [pipeline] = Object.values(template.findResources('AWS::CodePipeline::Pipeline'));
    stages = pipeline.Properties.Stages;
    expect(pipeline.Properties.PipelineType).toBe('V2');
  });

  const waveStages = () => stages.slice(4, stages.length - stack.routerStages.length).filter((s) => s.Name !== stack.approvalStage);

  // The one test of the whole example app against the cell-isolation pack (the pack's own rules and
  // findings: test/constructs/isolation/pack.test.ts); every cell and router stack also passed the AwsSolutions
  // gate of its pipeline stage while the pipeline was built.
  it('passes the cell-isolation pack with no open finding: the pipeline, the router stages and every cell stack', () => {
    expect(new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet)).validateScope(stack.node.root).violations).toEqual([]);
  });

  it('runs source, build (checks, unit tests, synth with the audit gate, cfn-lint), self-mutation and assets before the waves', () => {
    expect(stages.slice(0, 4).map((s) => s.Name)).toEqual(['Source', 'Build', 'UpdatePipeline', 'Assets']);
    const [synth] = Object.values(template.findResources('AWS::CodeBuild::Project')).filter((p) => JSON.stringify(p).includes('npx cdk synth'));
    const spec = JSON.parse(synth.Properties.Source.BuildSpec);
    expect(spec.phases.build.commands).toEqual([
      'npm ci --no-audit --no-fund',
      'npx tsc --noEmit -p .',
      'npm run -s lint:layers',
      'npm run -s lint',
      'npm run -s format:check',
      'npm run -s test:unit -- --ci',
      'npm run -s audit',
      'npx cdk synth -q --no-notices',
      'npm run -s lint:cfn -- cdk.out',
    ]);
    // Unprivileged: no container runtime, no integration tests, nothing installed as root.
    expect(synth.Properties.Environment).toMatchObject({ PrivilegedMode: false, ComputeType: 'BUILD_GENERAL1_MEDIUM' });
    const all = JSON.stringify(spec.phases);
    for (const needsMore of ['.ci/run', 'test:integration', 'npm test', 'apt-get']) expect(all).not.toContain(needsMore);
    expect(all).not.toMatch(/\b(podman|buildah|docker)\b/);
  });

  it('installs cfn-lint with pip in the build step, for the lint over the written templates', () => {
    const [synth] = Object.values(template.findResources('AWS::CodeBuild::Project')).filter((p) => JSON.stringify(p).includes('npx cdk synth'));
    const install: string[] = JSON.parse(synth.Properties.Source.BuildSpec).phases.install.commands;
    expect(install).toEqual(expect.arrayContaining([`pip install --quiet 'cfn-lint==${CFN_LINT_VERSION}'`, 'cfn-lint --version']));
  });

  it('installs the pinned cdk-assets in every asset project, never latest', () => {
    const assets = Object.entries(template.findResources('AWS::CodeBuild::Project')).filter(([id]) => /^PipelineAssets(File|Docker)Asset/.test(id));
    expect(assets.length).toBeGreaterThan(0);
    for (const [, project] of assets) {
      const install: string[] = JSON.parse(project.Properties.Source.BuildSpec).phases.install.commands;
      expect(install).toContain(`npm install -g cdk-assets@${CDK_ASSETS_VERSION}`);
      expect(install.join('\n')).not.toMatch(/cdk-assets@latest/);
    }
  });

  it('publishes each asset to its destinations in parallel, with a timeout sized from them', () => {
    const assets = Object.entries(template.findResources('AWS::CodeBuild::Project')).filter(([id]) => /^PipelineAssets(File|Docker)Asset/.test(id));
    expect(assets.length).toBeGreaterThan(0);
    for (const [id, project] of assets) {
      const commands: string[] = JSON.parse(project.Properties.Source.BuildSpec).phases.build.commands;
      expect(commands).toHaveLength(3);
      expect(commands[2]).toMatch(
        /^printf '%s\\n' "\$manifests" \| xargs -P 8 -I\{\} sh -c 'DOCKER_CONFIG=\$\(mktemp -d\) exec cdk-assets --path "\$1" publish [0-9a-f]{64}' publish \{\}$/,
      );
      const planned = Number(/synth planned (\d+)/.exec(commands[1])![1]);
      expect(project.Properties.TimeoutInMinutes).toBe(publishingTimeoutMinutes(planned, id.includes('Docker') ? 'docker' : 'file'));
    }
  });

  it('runs the build on Ubuntu 24.04 (standard:8.0) and a pinned Node.js LTS', () => {
    const projects = Object.values(template.findResources('AWS::CodeBuild::Project'));
    const [synth] = projects.filter((p) => JSON.stringify(p).includes('npx cdk synth'));
    expect(synth.Properties.Environment.Image).toBe('aws/codebuild/standard:8.0');
    const spec = JSON.parse(synth.Properties.Source.BuildSpec);
    const nvmrc = fs.readFileSync(path.join(REPO_ROOT, '.nvmrc'), 'utf8').trim();
    // standard:8.0 offers Node.js 22 and 24 (its definition's runtimes.yml).
    expect([22, 24]).toContain(Number(nvmrc));
    expect(spec.phases.install['runtime-versions']).toEqual({ nodejs: Number(nvmrc) });
    // Every CodeBuild step of the pipeline runs the same image and Node.js.
    for (const project of projects) {
      expect(project.Properties.Environment.Image).toBe('aws/codebuild/standard:8.0');
      expect(JSON.parse(project.Properties.Source.BuildSpec).phases.install['runtime-versions']).toEqual({ nodejs: Number(nvmrc) });
    }
  });

  it('grants codeconnections:UseConnection as well for a codeconnections connection ARN', () => {
    const arn = (fleet.pipeline!.source as { connectionArn: string }).connectionArn;
    expect(arn).toMatch(/^arn:aws:codeconnections:/);
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((st: { Resource: unknown }) => st.Resource === arn);
    expect(statements.flatMap((st: { Action: string | string[] }) => [st.Action].flat()).sort()).toEqual([
      'codeconnections:UseConnection',
      'codestar-connections:UseConnection',
    ]);
  });

  it('deploys the routers after every cell wave (they link every cell), region by region, canary group first, into the router account', () => {
    // First deploy into empty accounts: cells need nothing from the routers; a router stack reads each
    // cell's endpoint service name and seeds a mapping whose endpoints must resolve.
    expect(stages.slice(-4).map((s) => s.Name)).toEqual(ROUTER_STAGES);
    expect(stack.routerStages).toEqual(ROUTER_STAGES);
    expect(stages.findIndex((s) => s.Name.startsWith('routers-'))).toBeGreaterThan(
      stages.findIndex((s) => s.Actions.some((a) => a.Configuration?.StackName === `orders-cell-${fleet.cells.at(-1)!.id}`)),
    );
    const deploys = (stage: CfnStage) =>
      stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation')
        .sort((a, b) => (a.RunOrder ?? 1) - (b.RunOrder ?? 1))
        .map((a) => [a.Configuration!.StackName, a.RunOrder ?? 1]);
    for (const region of ['eu-west-1', 'us-east-1']) {
      const [first, second] = [stages.find((s) => s.Name === `routers-${region}-canary-group`)!, stages.find((s) => s.Name === `routers-${region}`)!];
      // After the failed-create step (run order 1): the region's router stack (NLB, target groups, the
      // parameters the groups read), then the canary group...
      expect(deploys(first)).toEqual([
        [`orders-router-${region}`, 2],
        [`orders-router-${region}-canary-group`, 3],
      ]);
      // ...and only in the next stage, after the canary group's bake, the other groups.
      expect(deploys(second)).toEqual([[`orders-router-${region}-groups`, 2]]);
      for (const stage of [first, second]) expect(stage.OnFailure).toEqual({ Result: 'ROLLBACK' });
    }
  });

  it('has one stage per wave, in plan order, each deploying exactly its cells', () => {
    const plan = planWaves(fleet);
    expect(waveStages()).toHaveLength(plan.waves.length);
    waveStages().forEach((stage, i) => {
      const deployed = stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation').map((a) => a.Configuration!.StackName);
      expect([stage.Name, deployed.sort()]).toEqual([[...stack.stages.keys()][i], plan.waves[i].cells.map((c) => `orders-cell-${c}`).sort()]);
    });
  });

  it("bakes each wave on exactly its cells' health alarms for the wave's bake time", () => {
    const plan = planWaves(fleet);
    const projects = template.findResources('AWS::CodeBuild::Project');
    waveStages().forEach((stage, i) => {
      const bake = stage.Actions.find((a) => a.Name.startsWith('bake-'))!;
      const deploys = stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation');
      expect(bake.RunOrder).toBeGreaterThan(Math.max(...deploys.map((d) => d.RunOrder ?? 1)));
      const project = JSON.stringify(Object.entries(projects).find(([id]) => JSON.stringify(bake.Configuration).includes(id))![1]);
      const alarms = [...project.matchAll(/orders-([a-z0-9-]+)-health/g)].map((m) => m[1]);
      expect([stage.Name, [...new Set(alarms)].sort()]).toEqual([stage.Name, [...plan.waves[i].cells].sort()]);
      expect(project).toContain(`bake_seconds=${plan.waves[i].bakeSeconds}\\\\n`);
    });
  });

  it("bakes each region's canary group on its own alarms before the other groups change, and the whole region before the next region", () => {
    const plan = planWaves(fleet);
    const projects = template.findResources('AWS::CodeBuild::Project');
    stages.slice(-4).forEach((stage, i) => {
      const wave = plan.routerWaves[i];
      expect(stage.Name).toBe(wave.name);
      const bake = stage.Actions.find((a) => a.Name.startsWith('bake-'))!;
      const deploys = stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation');
      expect(bake.RunOrder).toBeGreaterThan(Math.max(...deploys.map((d) => d.RunOrder ?? 1)));
      const project = JSON.stringify(Object.entries(projects).find(([id]) => JSON.stringify(bake.Configuration).includes(id))![1]);
      const watched = [
        ...project.matchAll(/router-([a-z0-9-]+) 222222222222 ([a-z0-9-]+) orders-router-\2-\1-health orders-router-\2-bake-watcher/g),
      ].map((m) => `${m[2]}/${m[1]}`);
      expect([stage.Name, [...new Set(watched)]]).toEqual([
        stage.Name,
        wave.part === 'canary' ? [`${wave.region}/canary`] : [`${wave.region}/canary`, `${wave.region}/main`],
      ]);
      expect(project).toContain(`bake_seconds=${wave.bakeSeconds}\\\\n`);
    });
  });

  it('rolls a failed wave back and enters waves only inside the deployment window (DeploymentWindow expression, seconds first)', () => {
    for (const stage of stages.slice(4).filter((s) => s.Name !== stack.approvalStage)) {
      expect([stage.Name, stage.OnFailure]).toEqual([stage.Name, { Result: 'ROLLBACK' }]);
      expect(stage.BeforeEntry!.Conditions[0].Rules[0]).toMatchObject({
        RuleTypeId: { Provider: 'DeploymentWindow' },
        Configuration: { Cron: '* * 8-16 ? * MON-THU *', TimeZone: 'UTC' },
      });
    }
    for (const stage of stages.slice(0, 4)) expect(stage.OnFailure).toBeUndefined();
  });

  it('asks for approval in a stage of its own right before the first non-canary wave: no window, no rollback, nothing else in it', () => {
    const approvals = stages.flatMap((s) => s.Actions.filter((a) => a.ActionTypeId.Category === 'Approval').map(() => s.Name));
    expect(approvals).toEqual([stack.approvalStage]);
    const index = stages.findIndex((s) => s.Name === stack.approvalStage);
    const approval = stages[index];
    expect(approval.Actions).toHaveLength(1);
    expect(approval.OnFailure).toBeUndefined();
    expect(approval.BeforeEntry).toBeUndefined();
    // The wave after it is the first non-canary wave and still waits for its window.
    expect(stages[index + 1].Name).toBe(waveStages()[1].Name);
    expect(stages[index + 1].BeforeEntry).toBeDefined();
    expect(stages[index - 1].Name).toBe(waveStages()[0].Name);
  });

  it("gives each bake its pipeline execution id and lets it read only this pipeline's executions", () => {
    const projects = template.findResources('AWS::CodeBuild::Project');
    for (const stage of [...waveStages(), ...stages.slice(-stack.routerStages.length)]) {
      const bake = stage.Actions.find((a) => a.Name.startsWith('bake-'))!;
      expect(JSON.parse(bake.Configuration!.EnvironmentVariables)).toEqual([
        { name: 'BAKE_PIPELINE_EXECUTION_ID', type: 'PLAINTEXT', value: '#{codepipeline.PipelineExecutionId}' },
      ]);
      const project = Object.entries(projects).find(([id]) => JSON.stringify(bake.Configuration).includes(id))![1];
      expect(project.Properties.Environment.EnvironmentVariables).toEqual(
        expect.arrayContaining([{ Name: 'BAKE_PIPELINE_NAME', Type: 'PLAINTEXT', Value: 'orders-cells' }]),
      );
    }
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((st: { Action: unknown }) => JSON.stringify(st.Action).includes('codepipeline:GetPipelineExecution'));
    expect(statements.length).toBe(waveStages().length + stack.routerStages.length);
    for (const st of statements) {
      expect(st.Action).toBe('codepipeline:GetPipelineExecution');
      expect(JSON.stringify(st.Resource)).toMatch(/:codepipeline:eu-west-1:111111111111:orders-cells"/);
    }
  });

  it('termination-protects every stack it deploys (the CloudFormation action ignores terminationProtection): cells and routers in the first action of their bake', () => {
    const projects = template.findResources('AWS::CodeBuild::Project');
    const projectOf = (action: CfnStage['Actions'][number]) =>
      JSON.stringify(Object.entries(projects).find(([id]) => JSON.stringify(action.Configuration).includes(id))![1]);
    for (const stage of stages.slice(4).filter((s) => s.Name !== stack.approvalStage)) {
      const deployed = stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation')
        .map((a) => a.Configuration!.StackName)
        .sort();
      const protector = stage.Actions.find((a) => a.Name.startsWith('bake-') || a.Name.startsWith('protect-'))!;
      expect(protector.RunOrder).toBeGreaterThan(1);
      const project = projectOf(protector);
      // The protect list: 'stack account region protector' (the deploy role is derived from account and region).
      const listed = [...project.matchAll(/'(orders-(?:cell|router)-[a-z0-9-]+?) (\d{12}) ([a-z]+-[a-z]+-\d) ([^\s']+)'/g)];
      const protectedStacks = listed.map((m) => m[1]).sort();
      expect([stage.Name, protectedStacks]).toEqual([stage.Name, deployed]);
      // The protect script, shipped once in the assembly, sourced after the stage's list.
      const commands = (
        JSON.parse(JSON.parse(project).Properties.Source.BuildSpec) as { phases: { build: { commands: string[] } } }
      ).phases.build.commands.join('\n');
      expect(commands).toContain("cdk_qualifier='hnb659fds'");
      expect(commands.indexOf('. ./protect.sh')).toBeGreaterThan(commands.indexOf('protect_targets=('));
      expect(commands.indexOf('. ./bake.sh')).toBeGreaterThan(commands.indexOf('. ./protect.sh'));
      expect(commands).not.toContain('update-termination-protection');
      expect(scripts['protect.sh']).toContain('update-termination-protection');
      // Deletion protection through the protector role of each stack that has a load balancer or database.
      expect(scripts['protect.sh']).toContain(
        'role="arn:$(stage_partition "$region"):iam::${account}:role/cdk-${cdk_qualifier}-deploy-role-${account}-${region}"',
      );
      const protectors = listed.map((m) => [m[1], m[4]]);
      for (const [name, protector] of protectors) {
        const expected = /-(canary-group|groups)$/.test(name)
          ? '-'
          : name.startsWith('orders-router-')
            ? `${name}-protector`
            : `orders-${name.slice('orders-cell-'.length)}-protector`;
        expect([name, protector]).toEqual([name, expected]);
      }
      expect(protectors.length).toBe(deployed.length);
    }
  });

  it("before the deploys of every stage, deletes what a failed first create left of exactly that stage's stacks (the synthesized step, run against a fake CloudFormation)", () => {
    const projects = template.findResources('AWS::CodeBuild::Project');
    const policies = Object.values(template.findResources('AWS::IAM::Policy'));
    for (const stage of stages.slice(4).filter((s) => s.Name !== stack.approvalStage)) {
      const deploys = stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation');
      const deployed = deploys.map((a) => a.Configuration!.StackName).sort();
      const clear = stage.Actions.find((a) => a.Name.startsWith('clear-'))!;
      expect([stage.Name, clear.RunOrder]).toEqual([stage.Name, 1]);
      expect(Math.min(...deploys.map((d) => d.RunOrder ?? 1))).toBeGreaterThan(1);
      const [id, project] = Object.entries(projects).find(([pid]) => JSON.stringify(clear.Configuration).includes(pid))!;
      const commands: string[] = JSON.parse(project.Properties.Source.BuildSpec).phases.build.commands;
      // Every stack of the stage is in ROLLBACK_COMPLETE; after the delete it is gone.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clear-'));
      try {
        const first = fakeStackStatuses(dir, Object.fromEntries(deployed.map((name) => [name, ['ROLLBACK_COMPLETE False', 'NONE']])));
        // Run where CodeBuild runs it: in the step's input, the scripts folder of the assembly.
        const result = runWithFakeAws(['sleep() { :; }', ...commands], { first, otherwise: 'exit 0' }, process.env, scriptsDir);
        expect([stage.Name, result.status]).toEqual([stage.Name, 0]);
        const deleted = result.calls.filter((c) => c.startsWith('cloudformation delete-stack'));
        expect(deleted.map((c) => /--stack-name (\S+)/.exec(c)![1]).sort()).toEqual(deployed);
        // Each through the deploy role of its own account.
        for (const call of deleted) {
          const name = /--stack-name (\S+)/.exec(call)![1];
          const env = stage.Name.startsWith('routers-')
            ? { account: fleet.accounts.router }
            : fleet.cells.find((c) => `orders-cell-${c.id}` === name)!;
          expect(call).toContain(`key=KEY-${env.account}`);
        }
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      // Its role may assume the stage's deploy roles, and no other stage's.
      const role = project.Properties.ServiceRole['Fn::GetAtt'][0];
      const statements = statementsOfRole(policies, role);
      const envs = deployed.map((name) => {
        if (stage.Name.startsWith('routers-')) return { account: fleet.accounts.router, region: /^orders-router-([a-z]+-[a-z]+-\d)/.exec(name)![1] };
        return fleet.cells.find((c) => `orders-cell-${c.id}` === name)!;
      });
      const deployRole = (e: { account: string; region: string }) =>
        `arn:aws:iam::${e.account}:role/cdk-hnb659fds-deploy-role-${e.account}-${e.region}`;
      for (const e of envs) expect([id, deployRole(e), mayAssume(statements, deployRole(e))]).toEqual([id, deployRole(e), true]);
      const mine = new Set(envs.map((e) => e.account));
      for (const e of [...fleet.cells, { account: fleet.accounts.router, region: 'eu-west-1' }].filter((o) => !mine.has(o.account))) {
        expect([id, deployRole(e), mayAssume(statements, deployRole(e))]).toEqual([id, deployRole(e), false]);
      }
    }
  });

  it('ships the clear, protect and bake scripts once: the synth step publishes them as a file set that every stage step takes as input', () => {
    expect(scripts).toEqual(stageScripts());
    const projects = template.findResources('AWS::CodeBuild::Project');
    const [synth] = Object.values(projects).filter((p) => JSON.stringify(p).includes('npx cdk synth'));
    const secondary = JSON.parse(synth.Properties.Source.BuildSpec).artifacts['secondary-artifacts'] as Record<string, { 'base-directory': string }>;
    const [artifact] = Object.entries(secondary).find(([, a]) => a['base-directory'] === `cdk.out/${STAGE_SCRIPTS_DIR}`)!;
    let steps = 0;
    for (const stage of stages.slice(4).filter((st) => st.Name !== stack.approvalStage)) {
      for (const action of stage.Actions.filter((a) => /^(clear|bake)-/.test(a.Name))) {
        expect([stage.Name, action.Name, (action as { InputArtifacts?: { Name: string }[] }).InputArtifacts?.map((i) => i.Name)]).toEqual([
          stage.Name,
          action.Name,
          [artifact],
        ]);
        const [, project] = Object.entries(projects).find(([pid]) => JSON.stringify(action.Configuration).includes(pid))!;
        const spec = project.Properties.Source.BuildSpec as string;
        // Only the stage's own list and the line that sources the script: none of the scripts' body.
        expect([action.Name, spec.includes('assume-role'), spec.includes('stage_partition()')]).toEqual([action.Name, false, false]);
        expect(spec).toMatch(/\. \.\/(failed-create|bake)\.sh/);
        steps += 1;
      }
    }
    expect(steps).toBe(2 * (waveStages().length + stack.routerStages.length));
  });

  it('a bake step as synthesized protects its stacks and, in a stage rollback, reads its alarms once and lets the rollback go on (run from the scripts folder)', () => {
    const projects = template.findResources('AWS::CodeBuild::Project');
    const stage = waveStages()[0];
    const deployed = stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation')
      .map((a) => a.Configuration!.StackName)
      .sort();
    const bake = stage.Actions.find((a) => a.Name.startsWith('bake-'))!;
    const [, project] = Object.entries(projects).find(([pid]) => JSON.stringify(bake.Configuration).includes(pid))!;
    const commands: string[] = JSON.parse(project.Properties.Source.BuildSpec).phases.build.commands;
    const result = runWithFakeAws(
      commands,
      {
        first: ['if [ "$1" = codepipeline ]; then echo ROLLBACK; exit 0; fi'],
        otherwise: 'echo OK',
      },
      { ...process.env, BAKE_PIPELINE_EXECUTION_ID: 'exec-1', BAKE_PIPELINE_NAME: 'orders-cells' },
      scriptsDir,
    );
    expect([result.status, result.out]).toEqual([0, expect.stringContaining('is a stage rollback')]);
    const protectedStacks = result.calls
      .filter((c) => c.startsWith('cloudformation update-termination-protection'))
      .map((c) => /--stack-name (\S+)/.exec(c)![1])
      .sort();
    expect(protectedStacks).toEqual(deployed);
    expect(result.calls.filter((c) => c.startsWith('cloudwatch describe-alarms'))).toHaveLength(
      stage.Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation').length,
    );
    // The roles it assumed are in the standard partition, derived from each target's region.
    expect(result.calls.filter((c) => c.startsWith('sts assume-role')).every((c) => /--role-arn arn:aws:iam::\d{12}:role\//.test(c))).toBe(true);
  });

  it("may assume only its cells' bake-watcher roles, and their deploy and protector roles to protect their stacks", () => {
    const plan = planWaves(fleet);
    const byId = new Map(fleet.cells.map((c) => [c.id, c]));
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p).includes('bake-watcher'));
    expect(policies).toHaveLength(waveStages().length + stack.routerStages.length);
    const rolesOf = (account: string, names: readonly string[]) => names.map((n) => `arn:aws:iam::${account}:role/${n}`);
    for (const region of new Set(plan.routerWaves.map((w) => w.region))) {
      // The region's two router stages (canary: router stack + canary group; rest: the other groups).
      const mine = policies
        .filter((p) => JSON.stringify(p).includes(`orders-router-${region}-bake-watcher`))
        .map((p) => p.Properties.PolicyDocument.Statement);
      expect(mine).toHaveLength(2);
      const common = rolesOf('222222222222', [`cdk-hnb659fds-deploy-role-222222222222-${region}`, `orders-router-${region}-bake-watcher`]);
      const protector = `arn:aws:iam::222222222222:role/orders-router-${region}-protector`;
      for (const statements of mine) for (const arn of common) expect([region, arn, mayAssume(statements, arn)]).toEqual([region, arn, true]);
      // The router stack has a load balancer to protect; the group stacks have none.
      expect(mine.map((statements) => mayAssume(statements, protector)).sort()).toEqual([false, true]);
      // Never another region's router roles, nor a cell's.
      const others = [...new Set(plan.routerWaves.map((w) => w.region))]
        .filter((r) => r !== region)
        .flatMap((r) =>
          rolesOf('222222222222', [`cdk-hnb659fds-deploy-role-222222222222-${r}`, `orders-router-${r}-bake-watcher`, `orders-router-${r}-protector`]),
        );
      const cell = fleet.cells[0];
      others.push(...rolesOf(cell.account, [`orders-${cell.id}-bake-watcher`, `cdk-hnb659fds-deploy-role-${cell.account}-${cell.region}`]));
      for (const statements of mine) for (const arn of others) expect([region, arn, mayAssume(statements, arn)]).toEqual([region, arn, false]);
    }
    for (const wave of plan.waves) {
      const cells = wave.cells.map((id) => byId.get(id)!);
      const statements = policies
        .map((p) => p.Properties.PolicyDocument.Statement)
        .find((st) => mayAssume(st, `arn:aws:iam::${cells[0].account}:role/orders-${cells[0].id}-bake-watcher`))!;
      expect(statements).toBeDefined();
      const rolesOfCell = (c: { id: string; account: string; region: string }) =>
        rolesOf(c.account, [`orders-${c.id}-bake-watcher`, `cdk-hnb659fds-deploy-role-${c.account}-${c.region}`, `orders-${c.id}-protector`]);
      for (const arn of cells.flatMap(rolesOfCell)) expect([wave.name, arn, mayAssume(statements, arn)]).toEqual([wave.name, arn, true]);
      // Another wave's cells (in accounts of their own) and the routers stay out of reach.
      const mine = new Set(cells.map((c) => c.account));
      const others = [
        ...fleet.cells.filter((c) => !mine.has(c.account)).flatMap(rolesOfCell),
        ...rolesOf('222222222222', [`orders-router-eu-west-1-bake-watcher`, 'cdk-hnb659fds-deploy-role-222222222222-eu-west-1']),
      ];
      for (const arn of others) expect([wave.name, arn, mayAssume(statements, arn)]).toEqual([wave.name, arn, false]);
    }
  });

  it('uses cross-account keys with rotation and deploys each cell into its own account', () => {
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    for (const cell of fleet.cells) {
      const stage = stack.node.findChild(`cell-${cell.id}`) as unknown as { stack: Stack };
      expect(`${stage.stack.account}/${stage.stack.region}`).toBe(`${cell.account}/${cell.region}`);
    }
  });

  it('writes the pipeline and router templates as compact JSON (they grow with every cell; CloudFormation stops at 1 MB)', () => {
    const assembly = (stack.node.root as Stage).synth();
    const pipelineText = fs.readFileSync(assembly.getStackArtifact(stack.artifactId).templateFullPath, 'utf8');
    expect(pipelineText.includes('\n ')).toBe(false);
    const routers = assembly.nestedAssemblies.flatMap((a) => a.nestedAssembly.stacks).filter((s) => s.stackName.startsWith('orders-router-'));
    expect(routers.map((r) => r.stackName).sort()).toEqual(
      ['eu-west-1', 'us-east-1'].flatMap((r) => [`orders-router-${r}`, `orders-router-${r}-canary-group`, `orders-router-${r}-groups`]),
    );
    for (const r of routers) expect(fs.readFileSync(r.templateFullPath, 'utf8').includes('\n ')).toBe(false);
  });
});

describe('PipelineStack options and limits', () => {
  // One pipeline for the options below (synthesis is the slow part): no approval, no deployment
  // window, and a group bake of a day, on the example cut to four cells with one single-cell wave:
  // a canary wave, a single-cell wave, a group wave of two cells, and both regions' router stages.
  let template: Template;
  beforeAll(() => {
    const example = smallExampleFleet(['canary-eu', 'eu-1', 'eu-2', 'us-1']);
    template = Template.fromStack(
      addPipeline(
        cdkApp(),
        {
          ...example,
          pipeline: { ...example.pipeline!, manualApproval: false, deploymentWindow: undefined },
          waves: { ...example.waves, singleCellWaves: 1, bakeSeconds: { ...example.waves.bakeSeconds, group: 86_400 } },
        },
        { audit: false },
      ),
    );
  });

  it('has no approval and no window when the config sets none', () => {
    const [pipeline] = Object.values(template.findResources('AWS::CodePipeline::Pipeline'));
    const stages: CfnStage[] = pipeline.Properties.Stages;
    expect(stages.some((s) => s.Actions.some((a) => a.ActionTypeId.Category === 'Approval'))).toBe(false);
    expect(stages.every((s) => s.BeforeEntry === undefined)).toBe(true);
    expect(stages.slice(4).every((s) => JSON.stringify(s.OnFailure) === '{"Result":"ROLLBACK"}')).toBe(true);
    expect(stages.slice(-4).map((s) => s.Name)).toEqual(ROUTER_STAGES);
  });

  it('chains a bake longer than one CodeBuild action may run (8 h) over sequential actions, and leaves room for them in the stage', () => {
    const [pipeline] = Object.values(template.findResources('AWS::CodePipeline::Pipeline'));
    const groups = (pipeline.Properties.Stages as CfnStage[]).filter((s) => /^wave-\d+-group$/.test(s.Name));
    expect(groups.length).toBeGreaterThan(0);
    const projects = template.findResources('AWS::CodeBuild::Project');
    for (const stage of groups) {
      const bakes = stage.Actions.filter((a) => a.Name.startsWith('bake-'));
      expect(bakes.map((b) => b.Name)).toEqual([1, 2, 3, 4].map((i) => `bake-${stage.Name}-${i}`));
      expect(bakes.map((b) => b.RunOrder)).toEqual([3, 4, 5, 6]);
      expect(stage.Actions.length).toBeLessThanOrEqual(50);
      for (const bake of bakes) {
        const project = Object.entries(projects).find(([id]) => JSON.stringify(bake.Configuration).includes(id))![1];
        expect(project.Properties.TimeoutInMinutes).toBeLessThanOrEqual(480);
        expect(JSON.stringify(project)).toContain('bake_seconds=21600\\\\n');
      }
    }
    // The failed-create step and four bake actions leave 45 deploy actions in a stage of 50.
    const large = { ...generateFleet(exampleInput(), 200), quotas: { interfaceEndpointsPerVpc: 200 } };
    const plan = planWaves(
      resolveFleet({
        ...large,
        waves: { ...large.waves, maxCellsPerWave: 60, growthFactor: 3, bakeSeconds: { ...large.waves.bakeSeconds, group: 86_400 } },
      }),
    );
    expect(Math.max(...plan.waves.map((w) => w.cells.length))).toBe(45);
  });

  it('fails synth with a clear message when the fleet needs more stages than a pipeline holds', () => {
    const input = generateFleet(exampleInput(), 120);
    const fleet = resolveFleet({
      ...input,
      quotas: { interfaceEndpointsPerVpc: 120 },
      waves: { ...input.waves, maxCellsPerWave: 2, growthFactor: 1.5 },
    });
    expect(() => addPipeline(cdkApp(), fleet, { audit: false })).toThrow(/needs \d+ pipeline stages .* a pipeline holds 50/);
  });

  it('gates cell stacks on open cdk-nag findings', () => {
    const stack = new Stack(cdkApp(), 'careless');
    new s3.Bucket(stack, 'Bucket');
    expect(() => assertNoOpenFindings(stack)).toThrow(
      /careless has 2 unacknowledged cdk-nag finding\(s\)[\s\S]*AwsSolutions-S1 on careless\/Bucket\/Resource/,
    );
  });
});
