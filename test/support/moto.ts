import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as http from 'http';
import { watchChild } from '../../lib/domain/files';
import { freePort, until } from './cells';

/**
 * moto (https://github.com/getmoto/moto) as an HTTP server on loopback: an independent emulator of
 * the AWS APIs, a second implementation beside the project's own stand-ins (s3rver behind a
 * conditional-write layer, aws-sdk-client-mock). One process per test file: `startMoto()` in
 * `beforeAll`, `stop()` in `afterAll`, `reset()` between tests.
 *
 * Every client talks to it with `endpoint` and, for S3, `forcePathStyle`. Credentials are any:
 * moto's account is 123456789012 unless an assumed role names another account, whose resources
 * are then separate (STS AssumeRole into another account id).
 */
export interface Moto {
  readonly endpoint: string;
  readonly pid: number;
  /** The last lines moto wrote on stderr (a 500's traceback among them), for a failing test's message. */
  log(): string;
  /** Forgets every resource of every account (moto's `/moto-api/reset`). */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** The account moto acts in for credentials that are not an assumed role's. */
export const MOTO_ACCOUNT = '123456789012';

export const MOTO_INSTALL_HINT =
  'moto_server not found on PATH: these tests run the AWS paths against moto 5.2 (Python 3): ' +
  "install it with `pip install 'moto[server]==5.2.1'` (or `apt-get install python3-moto` where the distribution has 5.x)";

/** Client options every AWS SDK client needs to talk to moto. */
export function motoClientConfig(moto: Moto, region = 'us-east-1') {
  return { endpoint: moto.endpoint, region, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' }, maxAttempts: 1 } as const;
}

function request(url: string, method: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Starts `moto_server` on a free loopback port and waits until it answers. Fails with the install
 * hint when moto is not installed: a machine without it fails these tests, it never skips them. A
 * port taken between the check and moto's bind is tried again on another, twice at most.
 */
export async function startMoto(options: { readonly command?: string } = {}): Promise<Moto> {
  const command = options.command ?? 'moto_server';
  if (spawnSync('sh', ['-c', 'command -v "$1"', 'sh', command], { encoding: 'utf8' }).status !== 0) throw new Error(MOTO_INSTALL_HINT);
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(command, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
    watchChild(child, { signal: 'TERM', killAfterMs: 5_000 });
    let stderr = '';
    let exited = false;
    child.stderr!.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-16000);
    });
    const exit = new Promise<void>((resolve) =>
      child.once('exit', () => {
        exited = true;
        resolve();
      }),
    );
    const endpoint = `http://127.0.0.1:${port}`;
    try {
      await until(
        `moto_server on port ${port}`,
        async () => {
          if (exited) throw new Error('exited');
          return (await request(`${endpoint}/moto-api/`, 'GET')) === 200;
        },
        30_000,
      );
    } catch (error) {
      child.kill('SIGKILL');
      await exit;
      if (attempt < 3 && /already in use/i.test(stderr)) continue;
      throw new Error(`moto_server did not start on port ${port}: ${stderr.trim().split('\n').slice(-3).join(' | ') || (error as Error).message}`);
    }
    return {
      endpoint,
      pid: child.pid!,
      log: () =>
        stderr
          .split('\n')
          .filter((l) => !/^127\.0\.0\.1 - - /.test(l))
          .join('\n'),
      reset: async () => {
        const status = await request(`${endpoint}/moto-api/reset`, 'POST');
        if (status !== 200) throw new Error(`moto reset answered ${status}`);
      },
      stop: async () => {
        if (!exited) process.kill(child.pid!, 'SIGTERM');
        await exit;
      },
    };
  }
}
