import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** One run of the fake CDK CLI: its arguments and the AWS settings it was started with. */
export interface FakeCdkCall {
  readonly args: string[];
  readonly accessKeyId: string;
  readonly sessionToken: string;
  readonly profile: string;
  readonly region: string;
}

export interface FakeCdk {
  /** How to start it (absolute paths; bash without start-up files or BASH_ENV). */
  readonly launcher: string[];
  calls(): FakeCdkCall[];
  remove(): void;
}

/**
 * A stand-in for the CDK CLI that records every call (arguments, credentials and region from its
 * environment) and exits 3 when its environment argument equals FAKE_CDK_FAIL. It runs under
 * `bash --norc --noprofile` with BASH_ENV unset, so nothing in the user's shell set-up can change it.
 */
export function fakeCdk(): FakeCdk {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-cdk-'));
  const log = path.join(dir, 'calls.log');
  const script = path.join(dir, 'cdk');
  fs.writeFileSync(
    script,
    [
      `printf '%s\\t%s\\t%s\\t%s\\t%s\\n' "$*" "$AWS_ACCESS_KEY_ID" "$AWS_SESSION_TOKEN" "$AWS_PROFILE" "$AWS_REGION" >> ${JSON.stringify(log)}`,
      'echo "fake cdk $*"',
      'if [ -n "$FAKE_CDK_FAIL" ] && [ "$2" = "$FAKE_CDK_FAIL" ]; then echo "fake cdk: failing $2" >&2; exit 3; fi',
      'exit 0',
      '',
    ].join('\n'),
  );
  return {
    launcher: ['/usr/bin/env', '-u', 'BASH_ENV', '/bin/bash', '--norc', '--noprofile', script],
    calls: () =>
      (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []).map((line) => {
        const [args, accessKeyId, sessionToken, profile, region] = line.split('\t');
        return { args: args.split(' '), accessKeyId, sessionToken, profile, region };
      }),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
