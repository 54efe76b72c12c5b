import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';

export interface CellKeyProps {
  readonly cellId: string;
}

/**
 * The cell's own customer-managed KMS key (rotated yearly): logs, database storage, the database
 * secret, queues and the alarm topic are encrypted with it, so no key is shared between cells and
 * disabling one cell's key touches nobody else.
 */
export class CellKey extends Construct {
  public readonly key: kms.Key;

  constructor(scope: Construct, id: string, props: CellKeyProps) {
    super(scope, id);
    const region = Stack.of(this).region;
    this.key = new kms.Key(this, 'Key', {
      description: `${props.cellId}: cell data, logs, queues and alarm topic`,
      enableKeyRotation: true,
      rotationPeriod: Duration.days(365),
      removalPolicy: RemovalPolicy.RETAIN,
      pendingWindow: Duration.days(30),
    });
    // CloudWatch Logs encrypts log groups with the key; CloudWatch alarms publish to the encrypted topic.
    this.key.grantEncryptDecrypt(new iam.ServicePrincipal(`logs.${region}.amazonaws.com`));
    this.key.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    this.key.addToResourcePolicy(denyGrantsExceptForAwsServices());
  }
}

/**
 * Control Tower CT.KMS.PR.3: only AWS services (RDS for the database storage, on the caller's
 * behalf) may create grants on a key; a principal that may otherwise use the key cannot hand it on.
 * `kms:GrantIsForAWSResource` is true when an integrated service creates the grant
 * (https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html).
 */
export function denyGrantsExceptForAwsServices(): iam.PolicyStatement {
  return new iam.PolicyStatement({
    effect: iam.Effect.DENY,
    principals: [new iam.AnyPrincipal()],
    actions: ['kms:CreateGrant'],
    resources: ['*'],
    conditions: { BoolIfExists: { 'kms:GrantIsForAWSResource': 'false', 'aws:PrincipalIsAWSService': 'false' } },
  });
}
