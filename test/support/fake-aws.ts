import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** What a pipeline script did against the fake `aws`: exit status, stdout + stderr, and each call. */
export interface FakeAwsRun {
  readonly status: number | null;
  readonly out: string;
  /** `<arguments> | key=<AWS_ACCESS_KEY_ID the call ran with, or none>`, one per call, in order. */
  readonly calls: string[];
}

export interface FakeAwsAnswers {
  /** Bash lines the fake runs first, in order; the first that answers exits (`echo …; exit 0`). */
  readonly first?: readonly string[];
  /** What it prints when nothing else answered. */
  readonly otherwise: string;
}

/**
 * Runs the shell lines `script` (what a pipeline step runs) with a fake `aws` that logs its calls.
 * After `answers.first`, `aws sts assume-role` answers the credentials `KEY-<first account id in
 * the call> SECRET TOKEN`, so each later call shows in its log line which account it acts in.
 *
 * The shell is `bash --norc --noprofile` without BASH_ENV or ENV, and `aws` is a function calling
 * the fake by absolute path, so neither the user's shell start-up files nor a real AWS CLI earlier
 * on PATH can change what runs. The fake's folder is removed before this returns. `cwd` is the
 * folder the lines run in (a pipeline step's input, such as the stage scripts).
 */
export function runWithFakeAws(script: readonly string[], answers: FakeAwsAnswers, env: NodeJS.ProcessEnv = process.env, cwd?: string): FakeAwsRun {
  const fake = fakeAwsCommand(answers);
  try {
    const { BASH_ENV: _bashEnv, ENV: _env, ...clean } = env;
    const result = spawnSync('/bin/bash', ['--norc', '--noprofile', '-c', [`aws() { ${JSON.stringify(fake.path)} "$@"; }`, ...script].join('\n')], {
      encoding: 'utf8',
      env: clean,
      cwd,
    });
    return { status: result.status, out: result.stdout + result.stderr, calls: fake.calls() };
  } finally {
    fake.remove();
  }
}

/** A fake `aws` program on disk (see runWithFakeAws for how it answers), for a command that runs the AWS CLI itself. */
export interface FakeAwsCommand {
  /** Its absolute path: what to run instead of `aws`. */
  readonly path: string;
  /** Each call so far, as FakeAwsRun.calls. */
  calls(): string[];
  remove(): void;
}

export function fakeAwsCommand(answers: FakeAwsAnswers): FakeAwsCommand {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-aws-'));
  const log = path.join(dir, 'calls.log');
  const fake = path.join(dir, 'aws');
  fs.writeFileSync(
    fake,
    [
      '#!/usr/bin/env bash',
      `echo "$* | key=\${AWS_ACCESS_KEY_ID:-none}" >> ${log}`,
      ...(answers.first ?? []),
      'if [ "$1" = sts ]; then echo "KEY-$(echo "$*" | grep -o "[0-9]\\{12\\}" | head -n1) SECRET TOKEN"; exit 0; fi',
      answers.otherwise,
    ].join('\n'),
    { mode: 0o755 },
  );
  return {
    path: fake,
    calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Fake `aws` answers (for `FakeAwsAnswers.first`) of a CloudFormation whose stacks' statuses come
 * from `statuses[stack]`: describe-stacks answers them call after call (the last repeats); `NONE`
 * answers "does not exist", `ERROR` an AccessDenied. `failDelete` makes delete-stack fail. Files in
 * `dir` hold the remaining answers.
 */
export function fakeStackStatuses(dir: string, statuses: Record<string, readonly string[]>, failDelete = false): string[] {
  for (const [stack, answers] of Object.entries(statuses)) fs.writeFileSync(path.join(dir, stack), answers.join('\n') + '\n');
  return [
    'stack=$(echo "$*" | sed -n "s/.*--stack-name \\([^ ]*\\).*/\\1/p")',
    `if [ "$2" = describe-stacks ]; then f=${JSON.stringify(dir)}/$stack; [ -f "$f" ] || f=/dev/null; line=$(head -n1 "$f"); [ "$(wc -l <"$f")" -gt 1 ] && sed -i 1d "$f";` +
      ' if [ -z "$line" ] || [ "$line" = NONE ]; then echo "An error occurred (ValidationError) when calling the DescribeStacks operation: Stack with id $stack does not exist" >&2; exit 254; fi;' +
      ' if [ "$line" = ERROR ]; then echo "An error occurred (AccessDenied)" >&2; exit 254; fi;' +
      ' echo "$line"; exit 0; fi',
    failDelete ? 'if [ "$2" = delete-stack ]; then echo "An error occurred (AccessDenied)" >&2; exit 254; fi' : ':',
  ];
}
