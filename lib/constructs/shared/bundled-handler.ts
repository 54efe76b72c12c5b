import * as fs from 'fs';
import * as path from 'path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as lambdaNodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { packageRoot } from '../../domain/files/package-root';

const LOCK_FILES = ['package-lock.json', 'yarn.lock', 'pnpm-lock.yaml', 'bun.lock', 'bun.lockb'];

/**
 * The lock file esbuild's project is rooted at: this repository's own, or, installed as a package
 * (npm packs no lock file), the one of the app that installed it, whose node_modules hold the SDK
 * the handler bundles.
 */
function lockFile(): string {
  const root = packageRoot(__dirname);
  for (let dir = root; ; dir = path.dirname(dir)) {
    const found = LOCK_FILES.map((name) => path.join(dir, name)).find((file) => fs.existsSync(file));
    if (found) return found;
    if (path.dirname(dir) === dir) {
      throw new Error(
        `the router's Lambda handlers are bundled from node_modules at synth, and no lock file (${LOCK_FILES.join(', ')}) is at or above ${root}; install the app's dependencies (npm install)`,
      );
    }
  }
}

/** A handler's TypeScript source, or the JavaScript compiled from it where the source is not shipped (the installed package). */
function handlerFile(entry: string): string {
  const compiled = entry.replace(/\.ts$/, '.js');
  return !fs.existsSync(entry) && fs.existsSync(compiled) ? compiled : entry;
}

export interface BundledHandlerProps {
  /** The handler's source (exports `handler`), under lib/constructs/router; its compiled .js when only that exists. */
  readonly entry: string;
  readonly role: iam.IRole;
  readonly description: string;
  /** What its log group holds, for the CloudWatch encryption finding. */
  readonly logs: string;
  /** What it calls, for the no-VPC finding. */
  readonly calls: string;
}

/**
 * A custom-resource handler of a router stack: `<scope>/Handler`, bundled at synth by esbuild from
 * node_modules (this repository's, or the app's that installed the package) with the AWS SDK inside (so its behaviour does not depend on the SDK the
 * Lambda runtime ships), logging to `<scope>/HandlerLogs` (kept two years) which `role` may write.
 * Two minutes: the handlers answer CloudFormation themselves, on every path, within that.
 */
export function bundledHandler(scope: Construct, props: BundledHandlerProps): lambdaNodejs.NodejsFunction {
  const logGroup = new logs.LogGroup(scope, 'HandlerLogs', { retention: logs.RetentionDays.TWO_YEARS, removalPolicy: RemovalPolicy.RETAIN });
  Validations.of(logGroup).acknowledge({
    id: 'ControlTower::CT.CLOUDWATCH.PR.3',
    reason: `Deploy-time log of ${props.logs}; CloudWatch Logs encrypts it at rest with its own key.`,
  });
  const depsLockFilePath = lockFile();
  const handler = new lambdaNodejs.NodejsFunction(scope, 'Handler', {
    entry: handlerFile(props.entry),
    handler: 'handler',
    projectRoot: path.dirname(depsLockFilePath),
    depsLockFilePath,
    runtime: lambda.Runtime.NODEJS_24_X,
    memorySize: 256,
    timeout: Duration.minutes(2),
    role: props.role,
    logGroup,
    description: props.description,
    // Local esbuild only (synth runs offline, without Docker); the SDK is bundled, not the runtime's.
    bundling: { bundleAwsSDK: true, forceDockerBundling: false, minify: true, sourceMap: false, logLevel: lambdaNodejs.LogLevel.WARNING },
  });
  logGroup.grantWrite(props.role);
  Validations.of(handler).acknowledge({
    id: 'ControlTower::CT.LAMBDA.PR.3',
    reason: `Runs only while CloudFormation deploys the router stack, ${props.calls} and answering CloudFormation on public endpoints; it handles no cell traffic and needs no path into a VPC.`,
  });
  return handler;
}
