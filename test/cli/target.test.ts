/**
 * `cellctl target`: the target chosen once (.cellctl-target.json, CELLCTL_TARGET over it) is what a
 * command acts on when its command line does not say --local, and the command's first line says so.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { cellctlIn } from '../support/cli';

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-target-'));
  // A local fleet's state directory as `move list --local` reads it (its moves, the fleet stopped).
  fs.mkdirSync(path.join(dir, 'state', 'moves'), { recursive: true });
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

afterEach(() => {
  delete process.env.CELLCTL_TARGET;
});

it('says when none is chosen, and then commands act on AWS unless they say --local', async () => {
  const shown = await cellctlIn(dir, 'target');
  expect(shown).toMatchObject({ code: 0, out: expect.stringMatching(/^none chosen: commands act on AWS unless they say --local/) });
  const aws = await cellctlIn(dir, 'move', 'list');
  expect(aws.err).not.toMatch(/^target:/);
  expect(aws.code).not.toBe(0);
});

it('chosen once, the local fleet is what `move list` reads without --local, named on the first line', async () => {
  expect(await cellctlIn(dir, 'target', 'local', '--state-dir', 'state')).toMatchObject({
    code: 0,
    out: 'target: the local fleet in state (.cellctl-target.json)\n',
  });
  expect(JSON.parse(fs.readFileSync(path.join(dir, '.cellctl-target.json'), 'utf8'))).toEqual({ target: 'local', stateDir: 'state' });
  const listed = await cellctlIn(dir, 'move', 'list');
  expect(listed.code).toBe(0);
  expect(listed.err.split('\n')[0]).toBe('target: the local fleet in state (from .cellctl-target.json)');
  expect(listed.out).toMatch(/^move +subject/);
  // The command line wins, and is not announced: the operator just typed it.
  const explicit = await cellctlIn(dir, 'move', 'list', '--local', '--state-dir', 'elsewhere');
  expect(explicit.err).toMatch(/^error: .*elsewhere\/fleet\.json not found/);
  expect((await cellctlIn(dir, 'target')).out).toBe('the local fleet in state (from .cellctl-target.json)\n');
});

it('CELLCTL_TARGET overrides the file, and a bad value is refused naming what to give', async () => {
  process.env.CELLCTL_TARGET = 'aws';
  const aws = await cellctlIn(dir, 'move', 'list');
  expect(aws.err.split('\n')[0]).toBe('target: the AWS fleet (cells.config.ts, the standard credentials) (from CELLCTL_TARGET)');
  expect(aws.code).not.toBe(0);
  process.env.CELLCTL_TARGET = 'local:state';
  expect((await cellctlIn(dir, 'move', 'list')).code).toBe(0);
  process.env.CELLCTL_TARGET = 'staging';
  const bad = await cellctlIn(dir, 'move', 'list');
  expect(bad).toMatchObject({
    code: 2,
    err: 'error: CELLCTL_TARGET=staging: give local, local:<state dir> or aws (or unset it to use .cellctl-target.json)\n',
  });
});

it('a broken target file is refused with how to choose again; clear forgets the target', async () => {
  fs.writeFileSync(path.join(dir, '.cellctl-target.json'), '{"target": "prod"}');
  const broken = await cellctlIn(dir, 'move', 'list');
  expect(broken.code).toBe(1);
  expect(broken.err).toMatch(/^error: \.cellctl-target\.json: target must be "local" .* or "aws"; choose again with `cellctl target local`/);
  expect((await cellctlIn(dir, 'target', 'clear')).code).toBe(0);
  expect(fs.existsSync(path.join(dir, '.cellctl-target.json'))).toBe(false);
});
