import { spawn, spawnSync, SpawnSyncOptions } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { REPO_ROOT } from './support/fleet';

/**
 * The package as another CDK app gets it: `npm pack` here, the tarball installed with npm into a
 * fresh app in a temporary folder (beside the app's own aws-cdk-lib and constructs, the package's
 * peer dependencies), and docs/package.md's example app, which imports from the package name only,
 * compiled with tsc against the package's .d.ts and synthesized the way `cdk synth` runs an app (its
 * cdk.json context: CDK's recommended feature flags, what `cdk init` writes). Packed and installed
 * once per run; npm reaches the registry, preferring its cache.
 */
const PACKAGE = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const versionOf = (name: string) =>
  (JSON.parse(fs.readFileSync(require.resolve(`${name}/package.json`, { paths: [REPO_ROOT] }), 'utf8')) as { version: string }).version;

/** Runs a command to completion; its output in the failure when it fails. */
function run(command: string, args: readonly string[], options: SpawnSyncOptions & { cwd: string }): string {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${options.cwd}) exited ${result.status ?? result.signal}:\n${String(result.stdout).slice(-4000)}\n${String(result.stderr).slice(-4000)}`,
    );
  }
  return String(result.stdout);
}

/** The first TypeScript block of docs/package.md: the example app. */
function exampleApp(): string {
  const page = fs.readFileSync(path.join(REPO_ROOT, 'docs', 'package.md'), 'utf8');
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(page);
  if (!block) throw new Error('docs/package.md has no ```ts block (the example app)');
  return block[1];
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string, sub = ''): string[] {
  return fs
    .readdirSync(path.join(dir, sub), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(dir, path.join(sub, e.name)) : [path.join(sub, e.name)]));
}

interface AssetManifest {
  readonly files?: Record<string, { readonly source: { readonly path: string } }>;
  readonly dockerImages?: Record<string, { readonly source: { readonly directory: string } }>;
}

describe('the packed package in a fresh CDK app', () => {
  let work: string;
  let app: string;
  let installed: string;
  let out: string;
  let synthOutput: string;
  const template = (stack: string) =>
    JSON.parse(fs.readFileSync(path.join(out, `${stack}.template.json`), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
  const assets = (stack: string) => JSON.parse(fs.readFileSync(path.join(out, `${stack}.assets.json`), 'utf8')) as AssetManifest;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'package-'));
    // `npm pack` compiles first (the prepare script, failing on an error under pack).
    const [packed] = JSON.parse(
      run('npm', ['pack', '--json', '--pack-destination', work], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] }),
    ) as { filename: string }[];
    app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify(
        {
          name: 'my-cells',
          private: true,
          dependencies: {
            [PACKAGE.name]: `file:${path.join(work, packed.filename)}`,
            'aws-cdk-lib': versionOf('aws-cdk-lib'),
            constructs: versionOf('constructs'),
            'cdk-nag': versionOf('cdk-nag'),
          },
        },
        null,
        2,
      ),
    );
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app });
    installed = path.join(app, 'node_modules', PACKAGE.name);

    fs.writeFileSync(path.join(app, 'app.ts'), exampleApp());
    fs.writeFileSync(path.join(app, 'cdk.json'), JSON.stringify({ app: 'node app.js', context: CURRENTLY_RECOMMENDED_FLAGS }, null, 2));
    // The package's types against the app, as the app's own build would check them.
    run(
      process.execPath,
      [
        require.resolve('typescript/bin/tsc', { paths: [REPO_ROOT] }),
        '--strict',
        '--target',
        'es2022',
        '--module',
        'commonjs',
        '--esModuleInterop',
        '--skipLibCheck',
        'app.ts',
      ],
      { cwd: app },
    );
    // What `cdk synth` does with cdk.json: the context and the output folder in the environment.
    out = path.join(app, 'cdk.out');
    const cdkJson = JSON.parse(fs.readFileSync(path.join(app, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
    const synth = spawnSync(process.execPath, ['app.js'], {
      cwd: app,
      encoding: 'utf8',
      env: { ...process.env, CDK_OUTDIR: out, CDK_CONTEXT_JSON: JSON.stringify(cdkJson.context) },
    });
    if (synth.status !== 0) throw new Error(`synth of the example app exited ${synth.status}:\n${synth.stdout}\n${synth.stderr}`);
    synthOutput = synth.stdout + synth.stderr;
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('installs compiled JavaScript and .d.ts, no TypeScript sources, with aws-cdk-lib, constructs and cdk-nag from the app', () => {
    const files = filesUnder(installed).filter((f) => !f.startsWith(`node_modules${path.sep}`));
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'bin/cellctl.js',
        'dist/lib/index.js',
        'dist/lib/index.d.ts',
        'dist/bin/cellctl.js',
        'images/router-haproxy/Dockerfile',
      ]),
    );
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    // The peer dependencies resolve to the app's copies: one aws-cdk-lib, so `instanceof` and
    // Stack.of work between the app's constructs and the package's.
    // cdk-nag too: the audit gate's packs and the acknowledgements are the app's cdk-nag, so a pack or
    // an acknowledgement of the app's own is one of the same rule set.
    for (const peer of ['aws-cdk-lib', 'constructs', 'cdk-nag']) {
      expect(fs.existsSync(path.join(installed, 'node_modules', peer))).toBe(false);
      expect(require.resolve(peer, { paths: [installed] })).toBe(require.resolve(peer, { paths: [app] }));
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(['aws-cdk-lib', 'cdk-nag', 'constructs']);
    expect(Object.keys(manifest.dependencies)).not.toContain('cdk-nag');
  });

  it('synthesizes the example app without a warning (no deprecated API in the example or the constructs)', () => {
    expect(synthOutput).not.toMatch(/\[WARNING\]|deprecated/i);
  });

  it('opens the curated entry point only', () => {
    const resolve = (request: string) =>
      spawnSync(process.execPath, ['-e', `require.resolve(${JSON.stringify(request)})`], { cwd: app, encoding: 'utf8' });
    expect(resolve(PACKAGE.name).status).toBe(0);
    const internal = resolve(`${PACKAGE.name}/dist/lib/cli`);
    expect(internal.status).not.toBe(0);
    expect(internal.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it("synthesizes the cells with the app's own workload image, and the region's router", () => {
    expect(
      fs
        .readdirSync(out)
        .filter((f) => f.endsWith('.template.json'))
        .sort(),
    ).toEqual(
      expect.arrayContaining([
        'cell-canary.template.json',
        'cell-eu-1.template.json',
        'router-eu-west-1.template.json',
        'router-eu-west-1-canary-group.template.json',
        'router-eu-west-1-groups.template.json',
      ]),
    );
    for (const cell of ['canary', 'eu-1']) {
      const images = Object.values(template(`cell-${cell}`).Resources)
        .filter((r) => r.Type === 'AWS::ECS::TaskDefinition')
        .flatMap((r) => (r.Properties!.ContainerDefinitions as { Image: unknown }[]).map((c) => c.Image));
      expect(images).toContainEqual('public.ecr.aws/nginx/nginx:stable');
    }
    const router = template('router-eu-west-1');
    expect(
      Object.values(router.Resources)
        .filter((r) => r.Type === 'AWS::ElasticLoadBalancingV2::LoadBalancer')
        .map((r) => r.Properties!.Type),
    ).toEqual(['network']);
  });

  it("builds the router and mover images and the router's Lambda handlers from what the package holds", () => {
    const contexts = [
      ...Object.values(assets('router-eu-west-1-canary-group').dockerImages ?? {}),
      ...Object.values(assets('cell-canary').dockerImages ?? {}),
    ].map((image) => fs.readdirSync(path.join(out, image.source.directory)).sort());
    // router-haproxy (its configuration rendered at synth), router-agent and mover, each bundled from dist/bin.
    expect(contexts).toEqual(
      expect.arrayContaining([
        expect.arrayContaining(['Dockerfile', 'haproxy.cfg']),
        ['Dockerfile', 'router-agent.js'],
        ['Dockerfile', 'mover.js', 'rds-ca-bundle.pem'],
      ]),
    );
    // The custom-resource handlers, bundled by esbuild with the AWS SDK from the app's node_modules.
    const bundles = Object.values(assets('router-eu-west-1').files ?? {})
      .map((f) => path.join(out, f.source.path))
      .filter((p) => fs.statSync(p).isDirectory())
      .map((dir) => fs.readFileSync(path.join(dir, 'index.js'), 'utf8'));
    // The mapping seed writes with If-None-Match (an SDK that knows it is inside); the endpoint
    // lookup reads the cell's SSM parameter as the cell's reader role; the home region guard reads its own.
    expect(bundles.filter((b) => b.includes('IfNoneMatch') && b.includes('PutObjectCommand'))).toHaveLength(1);
    expect(bundles.filter((b) => b.includes('GetParameterCommand') && b.includes('endpoint-lookup-'))).toHaveLength(1);
    expect(bundles.filter((b) => b.includes('GetParameterCommand') && b.includes('Custom::RouterHomeRegionGuard'))).toHaveLength(1);
  });

  it('runs cellctl from the installed package (`npx cellctl`)', () => {
    expect(run('npx', ['--no-install', 'cellctl', '--version'], { cwd: app }).trim()).toBe(PACKAGE.version);
  });

  it('runs `cellctl fleet local` from the installed package to a first routed answer', async () => {
    const stateDir = path.join(work, 'fleet-state');
    const cellctl = path.join(app, 'node_modules', '.bin', 'cellctl');
    const child = spawn(cellctl, ['fleet', 'local', '--cells', '1', '--port', '0', '--state-dir', stateDir], {
      cwd: app,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const started = Date.now();
      while (!output.includes('Ctrl-C or SIGTERM stops the fleet')) {
        if (child.exitCode !== null) throw new Error(`cellctl fleet local exited ${child.exitCode}`);
        if (Date.now() - started > 120_000) throw new Error('cellctl fleet local did not start within 120 s');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const router = /^router\s+(http:\/\/127\.0\.0\.1:\d+)/m.exec(output)![1];
      const response = await fetch(`${router}/v1/items`, {
        method: 'POST',
        headers: { 'x-tenant-id': 'acme', 'content-type': 'application/json' },
        body: '{"name":"x"}',
      });
      expect(response.status).toBe(201);
      expect(response.headers.get('x-cell')).toBe('cell-1');
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } catch (error) {
      child.kill('SIGTERM');
      await exited;
      throw new Error(`${(error as Error).message}\n${output.slice(-4000)}`);
    }
  }, 240_000);
});
