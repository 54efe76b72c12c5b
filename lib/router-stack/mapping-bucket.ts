import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { groupKey, GROUPS_PREFIX, VERSIONS_PREFIX } from '../mapping-store';

export interface MappingBucketProps {
  /** Bucket name (`router.mappingBucket`): routers in every region read it by name. */
  readonly bucketName: string;
  /** Name of the publisher role (what `cellctl mapping publish` runs as). */
  readonly publisherRoleName: string;
  /** Old versions of each object kept besides the current one. */
  readonly keptVersions: number;
}

/**
 * The mapping bucket: versioned, encrypted, private, TLS-only, access-logged, keeping a bounded
 * number of old versions. Only the publisher role can write; router groups can read only their own
 * pointer and the immutable versions.
 */
export class MappingBucket extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly publisher: iam.Role;
  public readonly accessLogs: s3.Bucket;

  constructor(scope: Construct, id: string, props: MappingBucketProps) {
    super(scope, id);
    if (!Number.isInteger(props.keptVersions) || props.keptVersions < 1 || props.keptVersions > 100) {
      throw new Error(`MappingBucket: keptVersions ${props.keptVersions} must be 1-100`);
    }
    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(365) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This bucket receives the mapping bucket\'s server access logs; logging it in turn would recurse.',
    });
    this.bucket = new s3.Bucket(this, 'Bucket', {
      bucketName: props.bucketName,
      versioned: true,
      // SSE-S3: routers in other regions read it by name, with no cross-region key grant to keep in sync.
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'mapping-bucket/',
      lifecycleRules: [{ noncurrentVersionsToRetain: props.keptVersions, noncurrentVersionExpiration: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.publisher = new iam.Role(this, 'Publisher', {
      roleName: props.publisherRoleName,
      description: 'Publishes mapping documents (cellctl mapping publish / rollback)',
      assumedBy: new iam.AccountRootPrincipal(),
    });
    // Exactly what MappingStore does (PUBLISHER_ACTIONS): read, conditional put, and list under the
    // two prefixes: the versions, and a key whose read was refused. S3 answers a missing key with 403,
    // not 404, to a caller without s3:ListBucket (GetObject API reference, "Permissions"); the store
    // lists the key to tell "missing" from "denied", so the first publish into an empty bucket works.
    const prefixes = [VERSIONS_PREFIX, GROUPS_PREFIX];
    this.publisher.addToPolicy(new iam.PolicyStatement({
      actions: ['s3:GetObject', 's3:PutObject'],
      resources: prefixes.map((prefix) => this.bucket.arnForObjects(`${prefix}*`)),
    }));
    this.publisher.addToPolicy(new iam.PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [this.bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': prefixes.map((prefix) => `${prefix}*`) } },
    }));
    const bucketId = Stack.of(this).resolve((this.bucket.node.defaultChild as s3.CfnBucket).logicalId) as string;
    Validations.of(this.publisher).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/mappings/*]`,
      reason: 'Every published version is a new object mappings/v<N>.json: the publisher must create keys it cannot know in advance, under this prefix only.',
    });
    Validations.of(this.publisher).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/groups/*]`,
      reason: 'The publisher writes the pointer of every router group (groups/<group>/mapping.json); groups are added by configuration.',
    });
    // Nobody but the publisher writes, whatever their own policies say.
    this.bucket.addToResourcePolicy(new iam.PolicyStatement({
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion', 's3:PutObjectAcl'],
      resources: [this.bucket.arnForObjects('*')],
      conditions: { ArnNotEquals: { 'aws:PrincipalArn': this.publisher.roleArn } },
    }));
  }

}

/**
 * Lets `grantee` (a router group's task role, in any region) read its group's pointer and the
 * immutable versions of the mapping bucket, nothing else. By name: the bucket lives in one region.
 */
export function grantMappingRead(grantee: iam.IGrantable, bucketName: string, group: string): void {
  const role = grantee.grantPrincipal as iam.Role;
  Validations.of(role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:aws:s3:::${bucketName}/mappings/*]`,
    reason: 'The immutable published versions (mappings/v<N>.json) are read-only to routers; their names are not known in advance.',
  });
  grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({
    actions: ['s3:GetObject'],
    resources: [`arn:aws:s3:::${bucketName}/${groupKey(group)}`, `arn:aws:s3:::${bucketName}/mappings/*`],
  }));
}
