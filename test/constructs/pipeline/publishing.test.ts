import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { compactPublishCommands, PUBLISH_PARALLELISM, publishingPlan, publishingTimeoutMinutes } from '../../../lib/constructs/pipeline';

const HASH = 'f178182c7c3aac6ad18bdaae53a2d38f72b2cf690d17b9efa635c7ce37f77d71';
const planned = (cells: number) =>
  Array.from(
    { length: cells },
    (_, i) =>
      `cdk-assets --path "assembly-orders-pipeline-cell-cell-${i}/orderspipelinecellcell${i}Cell.assets.json" --verbose publish "${HASH}:${100000000000 + i}-eu-west-1-be9ffe50"`,
  );

describe('asset publishing sized from the fleet', () => {
  it('publishes one asset to every planned destination with commands whose size does not grow with the fleet', () => {
    const small = compactPublishCommands(planned(8))!;
    const large = compactPublishCommands(planned(400))!;
    expect(large.destinations).toBe(400);
    expect(large.assetId).toBe(HASH);
    expect(large.commands.join('\n').length - small.commands.join('\n').length).toBeLessThan(10);
    expect(large.commands.join('\n')).toContain(
      `xargs -P ${PUBLISH_PARALLELISM} -I{} sh -c 'DOCKER_CONFIG=$(mktemp -d) exec cdk-assets --path "$1" publish ${HASH}' publish {}`,
    );
    expect(compactPublishCommands(['npm ci'])).toBeUndefined();
    expect(compactPublishCommands([...planned(1), planned(1)[0].replace(HASH, 'a'.repeat(64))])).toBeUndefined();
  });

  it('finds the manifests holding the asset at run time, and fails unless they are exactly the destinations synth planned', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'publish-'));
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // A stand-in cdk-assets that records what it was asked to publish, and with which Docker config.
    fs.writeFileSync(
      path.join(bin, 'cdk-assets'),
      `#!/bin/sh\necho "$@" >> ${path.join(dir, 'published')}\necho "$DOCKER_CONFIG" >> ${path.join(dir, 'configs')}\n`,
      {
        mode: 0o755,
      },
    );
    for (let i = 0; i < 3; i++) {
      fs.mkdirSync(path.join(dir, `assembly-orders-pipeline-cell-cell-${i}`));
      fs.writeFileSync(
        path.join(dir, `assembly-orders-pipeline-cell-cell-${i}`, `orderspipelinecellcell${i}Cell.assets.json`),
        JSON.stringify({ files: { [HASH]: {} } }),
      );
    }
    fs.mkdirSync(path.join(dir, 'assembly-other'));
    fs.writeFileSync(path.join(dir, 'assembly-other', 'other.assets.json'), JSON.stringify({ files: { ['b'.repeat(64)]: {} } }));
    const run = (cells: number) =>
      execFileSync('bash', ['-ec', compactPublishCommands(planned(cells))!.commands.join('\n')], {
        cwd: dir,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
        encoding: 'utf8',
        stdio: 'pipe',
      });
    run(3);
    expect(fs.readFileSync(path.join(dir, 'published'), 'utf8').trim().split('\n').sort()).toEqual(
      [0, 1, 2].map((i) => `--path assembly-orders-pipeline-cell-cell-${i}/orderspipelinecellcell${i}Cell.assets.json publish ${HASH}`),
    );
    // Each process its own Docker config: parallel logins to different registries do not share one file.
    const configs = fs.readFileSync(path.join(dir, 'configs'), 'utf8').trim().split('\n');
    expect(new Set(configs).size).toBe(3);
    for (const config of configs) expect(fs.statSync(config).isDirectory()).toBe(true);
    expect(() => run(4)).toThrow(/publish: asset f178\w+ is in 3 manifests, synth planned 4/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("sizes the timeout from the destinations, within CodeBuild's hour and 36 hours", () => {
    expect(publishingTimeoutMinutes(8, 'docker')).toBe(60);
    expect(publishingTimeoutMinutes(400, 'file')).toBe(Math.ceil(400 / PUBLISH_PARALLELISM) * 2 + 15);
    expect(publishingPlan(400, 'file').parallelism).toBe(PUBLISH_PARALLELISM);
    // An image to 400 accounts 8 at a time is 515 minutes, past a pipeline action's 8 hours: 9 at a time.
    expect(publishingPlan(400, 'docker')).toEqual({ parallelism: 9, timeoutMinutes: Math.ceil(400 / 9) * 10 + 15 });
    expect(publishingPlan(1000, 'docker')).toEqual({ parallelism: 22, timeoutMinutes: 475 });
    expect(() => publishingPlan(100_000, 'docker')).toThrow(/over the CodePipeline CodeBuild action timeout of 480 minutes .*split the fleet/);
  });
});
