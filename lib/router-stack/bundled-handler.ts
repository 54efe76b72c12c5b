import * as path from 'path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as lambdaNodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

const PROJECT_ROOT = path.join(__dirname, '..', '..');

export interface BundledHandlerProps {
  /** The handler's source (exports `handler`), under lib/router-stack. */
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
 * node_modules with this project's AWS SDK inside (so its behaviour does not depend on the SDK the
 * Lambda runtime ships), logging to `<scope>/HandlerLogs` (kept two years) which `role` may write.
 * Two minutes: the handlers answer CloudFormation themselves, on every path, within that.
 */
export function bundledHandler(scope: Construct, props: BundledHandlerProps): lambdaNodejs.NodejsFunction {
  const logGroup = new logs.LogGroup(scope, 'HandlerLogs', { retention: logs.RetentionDays.TWO_YEARS, removalPolicy: RemovalPolicy.RETAIN });
  Validations.of(logGroup).acknowledge({
    id: 'ControlTower::CT.CLOUDWATCH.PR.3',
    reason: `Deploy-time log of ${props.logs}; CloudWatch Logs encrypts it at rest with its own key.`,
  });
  const handler = new lambdaNodejs.NodejsFunction(scope, 'Handler', {
    entry: props.entry,
    handler: 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
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
