import { Aws, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { perCreationBucketName } from '../shared/log-bucket';
import { GROUPS_PREFIX, VERSIONS_PREFIX } from '../../adapters/mapping-store/store';
import { SERVED_PREFIX } from '../../runtime/router/served';
import { HANDOFF_PREFIX, MOVE_RECORDS_PREFIX, TASKS_PREFIX } from '../../domain/names/move-bucket';
import { moveBucketNamePrefix, moveOperatorRoleName, moverLauncherRoleName, moverTaskRoleName } from '../../domain/names';

export interface MoveBucketProps {
  readonly app: string;
  /** The account this stack deploys to (the router account). */
  readonly routerAccount: string;
  /** Operators may also run `cellctl move` from the pipeline's account. */
  readonly toolingAccount: string;
  /** Every cell: id and account. Their movers get lanes in the bucket; the operator may run their tasks. */
  readonly cells: readonly { readonly id: string; readonly account: string }[];
  /**
   * The AWS Organizations id (`o-…`) the cell accounts are in. With it the bucket policy and the
   * operator's role name the cells' roles by name pattern bounded by the organization
   * (`aws:PrincipalOrgID`, `aws:ResourceOrgID`): policies of constant size, whatever the fleet's
   * size. Without it they list every cell's account (about 15 characters per cell in the operator's
   * policy, 50 in the bucket policy), which reach IAM's and S3's limits at a few hundred cells.
   * @default - the cells' accounts are listed
   */
  readonly organizationId?: string;
  /** Server access logs go here (the region's log bucket). */
  readonly accessLogs: s3.IBucket;
  /** SSM parameter naming the bucket for `cellctl move`. */
  readonly parameterName: string;
  /** Every region's mapping bucket name prefix (`router.mappingBucket`): the operator publishes freezes and flips. */
  readonly mappingBucketPrefix: string;
  /** Regions with a mapping bucket, and the SSM parameter naming it in each. */
  readonly mappingRegions: readonly string[];
  readonly mappingBucketParameter: string;
  /** SSM parameter naming each mapping region's router cluster (the probe lists its running tasks). */
  readonly routerClusterParameter: string;
  /**
   * Days a move's hand-off data and task requests/results are kept. A move that is still running
   * after this finds its data gone and exports it again on resume (docs/moves.md, "Moves between AWS cells").
   * @default 14
   */
  readonly handoffDays?: number;
}

/**
 * The fleet's move bucket (router account, the fleet's `router.homeRegion`) and the role that drives AWS
 * moves. One bucket per fleet, not per region: a move's record must be one object, written with
 * conditional requests, whatever regions its two cells are in.
 *
 * - Versioned, SSE-S3, public access blocked, TLS-only, bucket owner enforced (ACLs off: every object
 *   a cell's mover writes belongs to the router account; S3 User Guide, "Controlling ownership of
 *   objects and disabling ACLs for your bucket"), access-logged.
 * - Lifecycle: `handoff/` and `tasks/` expire after `handoffDays`; move records and their audit log
 *   never do (old versions of a record after 90 days).
 * - Bucket policy: each cell's mover role (`<app>-<cell>-mover`, in the cell's own account) may write
 *   only `handoff/*\/from=<its account>/*` and its task results, read only `handoff/*\/to=<its
 *   account>/*` and its task requests. One statement covers every cell through the
 *   `${aws:PrincipalAccount}` policy variable (IAM User Guide, "IAM policy elements: Variables and
 *   tags": global condition keys may be used as variables); the principals are the fleet's cell
 *   accounts by id, so the policy is not "public" and Block Public Access accepts it (S3 User Guide,
 *   "The meaning of public": a policy granting to fixed principals). Nobody but the operator writes
 *   move records or task requests, whatever their own policies say.
 * - The principals are accounts, not role ARNs: a role ARN in a resource policy must exist when the
 *   policy is written and turns into an unusable id when the role is recreated (IAM User Guide, "AWS
 *   JSON policy elements: Principal"); `aws:PrincipalArn` in a condition has neither problem. With
 *   `organizationId` the principal is any, bounded by `aws:PrincipalOrgID` (a fixed value of that
 *   key keeps the policy non-public for Block Public Access, S3 User Guide, "The meaning of public")
 *   and the mover role name pattern, and neither the router nor the tooling account: the policy no
 *   longer grows with the fleet.
 */
export class MoveBucket extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly operator: iam.Role;
  public readonly parameter: ssm.StringParameter;

  constructor(scope: Construct, id: string, props: MoveBucketProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const prefix = moveBucketNamePrefix(props.app, props.routerAccount);
    if (prefix.length > 50)
      throw new Error(`MoveBucket: bucket name prefix \`${prefix}\` is longer than 50 characters (the name adds 13); shorten the app name`);
    const days = props.handoffDays ?? 14;
    if (!Number.isInteger(days) || days < 1) throw new Error(`MoveBucket: handoffDays ${days} must be a whole number of days >= 1`);
    this.bucket = new s3.Bucket(this, 'Bucket', {
      bucketName: perCreationBucketName(prefix),
      versioned: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: props.accessLogs,
      serverAccessLogsPrefix: 'move-bucket/',
      lifecycleRules: [
        {
          id: 'handoff',
          prefix: HANDOFF_PREFIX,
          expiration: Duration.days(days),
          noncurrentVersionExpiration: Duration.days(1),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        { id: 'tasks', prefix: TASKS_PREFIX, expiration: Duration.days(days), noncurrentVersionExpiration: Duration.days(1) },
        { id: 'records', prefix: MOVE_RECORDS_PREFIX, noncurrentVersionExpiration: Duration.days(90) },
      ],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const [rule, reason] of Object.entries({
      'ControlTower::CT.S3.PR.4':
        "Moves are driven by the operator, which reads each task's result after the task stops; nothing reacts to object events.",
      'ControlTower::CT.S3.PR.9':
        'Hand-off data expires by lifecycle after a move; Object Lock would stop that expiry. Move records are written only conditionally (If-None-Match / If-Match) and versioned.',
      'ControlTower::CT.S3.PR.10':
        "SSE-S3: every cell's mover role, each in its own account, reads and writes here; a KMS key would need a cross-account key grant per cell kept in sync with the fleet.",
    }))
      Validations.of(this.bucket).acknowledge({ id: rule, reason });

    const partition = Aws.PARTITION;
    const objects = (pattern: string) => `${this.bucket.bucketArn}/${pattern}`;
    const cellAccounts = [...new Set(props.cells.map((c) => c.account))].sort();
    if (cellAccounts.length > 0) {
      const moverRoles = { ArnLike: { 'aws:PrincipalArn': `arn:${partition}:iam::*:role/${moverTaskRoleName(props.app, '*')}` } };
      const movers = props.organizationId
        ? {
            principals: [new iam.AnyPrincipal()],
            conditions: {
              ...moverRoles,
              StringEquals: { 'aws:PrincipalOrgID': props.organizationId },
              StringNotEquals: { 'aws:PrincipalAccount': [props.routerAccount, props.toolingAccount] },
            },
          }
        : { principals: cellAccounts.map((account) => new iam.AccountPrincipal(account)), conditions: moverRoles };
      this.bucket.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'CellMoversWriteOwnLanes',
          ...movers,
          actions: ['s3:PutObject'],
          resources: [
            objects(`${HANDOFF_PREFIX}*/from=\${aws:PrincipalAccount}/*`),
            objects(`${TASKS_PREFIX}\${aws:PrincipalAccount}/*/result.json`),
          ],
        }),
      );
      this.bucket.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'CellMoversReadOwnLanes',
          ...movers,
          actions: ['s3:GetObject'],
          resources: [objects(`${HANDOFF_PREFIX}*/to=\${aws:PrincipalAccount}/*`), objects(`${TASKS_PREFIX}\${aws:PrincipalAccount}/*/request.json`)],
        }),
      );
    }
    const operatorArn = `arn:${partition}:iam::${props.routerAccount}:role/${moveOperatorRoleName(props.app)}`;
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'OnlyTheOperatorWritesRecordsAndRequests',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion'],
        resources: [objects(`${MOVE_RECORDS_PREFIX}*`), objects(`${TASKS_PREFIX}*/request.json`)],
        conditions: { ArnNotEquals: { 'aws:PrincipalArn': operatorArn } },
      }),
    );

    this.parameter = new ssm.StringParameter(this, 'Name', {
      parameterName: props.parameterName,
      description: 'The move bucket of the fleet (cellctl move keeps move records and hand-off data there)',
      stringValue: this.bucket.bucketName,
    });

    // The operator: what `cellctl move` runs as (an operator of the router account or the tooling
    // account assumes it). Everything the AWS move path calls, and nothing more (test/iam/moves).
    this.operator = new iam.Role(this, 'Operator', {
      roleName: moveOperatorRoleName(props.app),
      description: 'Drives moves between AWS cells (cellctl move): move records, hand-off, mapping freeze/flip, mover tasks',
      assumedBy: new iam.CompositePrincipal(new iam.AccountPrincipal(props.routerAccount), new iam.AccountPrincipal(props.toolingAccount)),
      // Role chaining (operator -> this role) caps sessions at 1 hour; the CLI refreshes them.
      maxSessionDuration: Duration.hours(1),
    });
    const op = this.operator;
    // Move records, the plan lock and the audit log (S3MoveStore), task requests and results.
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [objects(`${MOVE_RECORDS_PREFIX}*`), objects(`${TASKS_PREFIX}*`)],
      }),
    );
    // The stale plan lock, and a finished or aborted move's hand-off data.
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:DeleteObject'],
        resources: [objects(`${MOVE_RECORDS_PREFIX}.plan-lock`), objects(`${HANDOFF_PREFIX}*`)],
      }),
    );
    // Listing moves and audit entries, a move's hand-off data (to remove it), and telling a missing
    // record (404) from a denied one: S3 answers 403 for a missing key without s3:ListBucket.
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [`${MOVE_RECORDS_PREFIX}*`, `${HANDOFF_PREFIX}*`, `${TASKS_PREFIX}*`] } },
      }),
    );
    // Freeze, flip and unfreeze are mapping publishes to every region's bucket (as the publisher does).
    const mappingBuckets = `arn:${partition}:s3:::${props.mappingBucketPrefix}-*`;
    const ownAccount = { StringEquals: { 's3:ResourceAccount': props.routerAccount } };
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [`${mappingBuckets}/${VERSIONS_PREFIX}*`, `${mappingBuckets}/${GROUPS_PREFIX}*`],
        conditions: ownAccount,
      }),
    );
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [mappingBuckets],
        conditions: { ...ownAccount, StringLike: { 's3:prefix': [`${VERSIONS_PREFIX}*`, `${GROUPS_PREFIX}*`, `${SERVED_PREFIX}*`] } },
      }),
    );
    // Which mapping version each router task serves: its report served/<group>/<task id>.json (read only).
    op.addToPolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`${mappingBuckets}/${SERVED_PREFIX}*`], conditions: ownAccount }),
    );
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['ssm:GetParameter'],
        resources: [
          stack.formatArn({ service: 'ssm', resource: 'parameter', resourceName: props.parameterName.replace(/^\//, '') }),
          ...props.mappingRegions.flatMap((region) =>
            [props.mappingBucketParameter, props.routerClusterParameter].map((name) =>
              stack.formatArn({ service: 'ssm', region, resource: 'parameter', resourceName: name.replace(/^\//, '') }),
            ),
          ),
        ],
      }),
    );
    // Which router tasks ECS runs: a task whose served report went stale while ECS still runs it
    // (a hung agent) holds a freeze back instead of being forgotten (servedReportProbe). ListTasks
    // has no resource-level permission for a cluster's tasks; the condition keeps it to this account's clusters.
    op.addToPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:ListTasks'],
        resources: ['*'],
        conditions: { ArnLike: { 'ecs:cluster': `arn:${partition}:ecs:*:${props.routerAccount}:cluster/*` } },
      }),
    );
    // Each cell's launcher role: runs and watches that cell's mover task, nothing else. With the
    // organization, one pattern bounded by it (`aws:ResourceOrgID`: the organization of the account
    // that owns the role being assumed) instead of one ARN per cell, so the policy does not grow.
    if (props.cells.length > 0) {
      op.addToPolicy(
        props.organizationId
          ? new iam.PolicyStatement({
              actions: ['sts:AssumeRole'],
              resources: [`arn:${partition}:iam::*:role/${moverLauncherRoleName(props.app, '*')}`],
              conditions: { StringEquals: { 'aws:ResourceOrgID': props.organizationId } },
            })
          : new iam.PolicyStatement({
              actions: ['sts:AssumeRole'],
              resources: props.cells.map((c) => `arn:${partition}:iam::${c.account}:role/${moverLauncherRoleName(props.app, c.id)}`),
            }),
      );
      if (props.organizationId) {
        Validations.of(op).acknowledge({
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::*:role/${moverLauncherRoleName(props.app, '*')}]`,
          reason:
            "Every cell's mover launcher role, by the name each cell stack gives it, only in accounts of the fleet's organization (aws:ResourceOrgID); each launcher trusts only this role.",
        });
      }
    }
    for (const [resource, reason] of [
      [`<MovesBucket>/${MOVE_RECORDS_PREFIX}*`, 'One record and audit log per move (moves/<id>/…), created at run time.'],
      [`<MovesBucket>/${TASKS_PREFIX}*`, 'One request and result per mover task (tasks/<cell account>/<request id>/…), created at run time.'],
      [`<MovesBucket>/${HANDOFF_PREFIX}*`, "A finished or aborted move's hand-off data is removed (handoff/<move id>/…)."],
      [
        `${mappingBuckets.replace(`arn:${partition}`, 'arn:<AWS::Partition>')}/${VERSIONS_PREFIX}*`,
        "Freeze, flip and unfreeze publish new mapping versions (mappings/v<N>.json) to every region's bucket; this account's buckets only.",
      ],
      [
        `${mappingBuckets.replace(`arn:${partition}`, 'arn:<AWS::Partition>')}/${GROUPS_PREFIX}*`,
        "Each router group's pointer is moved to the new version; this account's buckets only.",
      ],
      [
        `${mappingBuckets.replace(`arn:${partition}`, 'arn:<AWS::Partition>')}/${SERVED_PREFIX}*`,
        "Each router task's report of the version it serves (served/<group>/<task id>.json, task ids made at run time), read to know when every router applied a freeze or flip; this account's buckets only.",
      ],
      [
        mappingBuckets.replace(`arn:${partition}`, 'arn:<AWS::Partition>'),
        "Each region's mapping bucket is named <prefix>-<part of its stack id>; listing is limited to mappings/, groups/ and served/.",
      ],
      [
        '*',
        "ecs:ListTasks takes no resource-level permission on a cluster's tasks (it is conditioned on ecs:cluster to this router account's clusters): the move lists the router groups' running tasks, read only.",
      ],
    ]) {
      Validations.of(op).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${resource.replace('<MovesBucket>', `<${stack.getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket)}.Arn>`)}]`,
        reason,
      });
    }
  }
}
