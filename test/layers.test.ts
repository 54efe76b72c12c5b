import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/**
 * The layer rules of lib/ (.dependency-cruiser.cjs, docs/design.md "Code layout") as CI runs them
 * (`npm run lint:layers`): the tree passes, and a copy of it with one back import, one type-only back
 * import, a CDK import in the CLI and an import circle is refused, each by its rule.
 */
const ROOT = path.join(__dirname, '..');
const DEPCRUISE = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

function cruise(root: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [DEPCRUISE, 'lib', '--config', '.dependency-cruiser.cjs', '--output-type', 'err-long'], {
    cwd: root,
    encoding: 'utf8',
  });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe('the layers of lib/', () => {
  let copy: string;
  beforeAll(() => {
    copy = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-factory-layers-'));
    for (const entry of ['lib', 'tsconfig.json', '.dependency-cruiser.cjs'])
      fs.cpSync(path.join(ROOT, entry), path.join(copy, entry), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'));
    const write = (file: string, text: string) => fs.appendFileSync(path.join(copy, 'lib', file), text);
    // The domain reaching up into a construct, once at run time and once for a type only.
    write('domain/waves/plan.ts', "\nimport { CellStack } from '../../constructs/cell/cell-stack';\nexport const backImport = CellStack;\n");
    write(
      'domain/mapping/types.ts',
      "\nimport type { RouterGroupProps } from '../../constructs/router/router-group';\nexport type BackType = RouterGroupProps;\n",
    );
    // The CLI loading CDK, and a circle inside one layer.
    write('cli/io.ts', "\nimport { App } from 'aws-cdk-lib';\nexport const cdkInCli = App;\n");
    write('domain/names/index.ts', "\nimport { planWaves } from '../waves/plan';\nexport const circle = planWaves;\n");
    write('domain/waves/plan.ts', "\nimport { cellStackName } from '../names';\nexport const circleBack = cellStackName;\n");
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it('holds on the tree as it is', () => {
    const { status, out } = cruise(ROOT);
    expect(out).toMatch(/no dependency violations found/);
    expect(status).toBe(0);
  });

  it('refuses a back import, a type-only back import, CDK in the CLI and a circle, naming the rule and the files', () => {
    const { status, out } = cruise(copy);
    expect(status).not.toBe(0);
    expect(out).toMatch(/layer-domain[\s\S]*lib\/domain\/waves\/plan\.ts → lib\/constructs\/cell\/cell-stack\.ts/);
    expect(out).toMatch(/layer-domain[\s\S]*lib\/domain\/mapping\/types\.ts → lib\/constructs\/router\/router-group\.ts/);
    expect(out).toMatch(/cdk-only-in-constructs-and-app[\s\S]*lib\/cli\/io\.ts → node_modules\/aws-cdk-lib/);
    expect(out).toMatch(/no-circular[\s\S]*lib\/domain\/(names\/index|waves\/plan)\.ts/);
  });
});
