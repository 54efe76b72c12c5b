import * as path from 'path';
import { ArnFormat, Aws, CustomResource, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambdaNodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct, IConstruct } from 'constructs';
import { LogBucket, perCreationBucketName } from '../shared/log-bucket';
import { bundledHandler } from '../shared/bundled-handler';
import { groupKey, GROUPS_PREFIX, LANES_PREFIX, VERSIONS_PREFIX, versionKey, ZONES_PREFIX, zonesKey } from '../../adapters/mapping-store';
import { SERVED_PREFIX, servedPrefix } from '../../runtime/router/served';

/** How long an unrefreshed `served/` report is kept (a task killed without saying it stopped, a group scaled to 0). */
export const SERVED_REPORT_EXPIRY_DAYS = 7;

export interface MappingBucketProps {
  /** `router.mappingBucket`: the bucket is `<prefix>-<12 hex of the stack id>`. */
  readonly namePrefix: string;
  /** SSM parameter (in this account and region) that names the bucket for `cellctl mapping publish`. */
  readonly parameterName: string;
  /** Roles allowed to write documents (the publisher, the seeding custom resource); everyone else is denied. */
  readonly writerRoleArns: readonly string[];
  /** Old versions of each object kept besides the current one. */
  readonly keptVersions: number;
  /**
   * Each router group's task role in this region: the only writer of its `served/<group>/` reports
   * (the version each task serves). Nobody else writes under `served/`.
   */
  readonly routerTaskRoles?: readonly { readonly group: string; readonly roleArn: string }[];
}

/**
 * The mapping bucket of one region: versioned, encrypted, private, TLS-only, access-logged, keeping a
 * bounded number of old versions. Only the writer roles can write; router groups can read only
 * their own pointer and the immutable versions. Each region has its own, so no region's routers
 * depend on another region's S3; `cellctl mapping publish` writes every region's bucket.
 *
 * The name ends with part of the stack id, which is new on every stack creation: a first deploy that
 * failed and rolled back leaves its (retained) bucket behind, and the retry creates another instead
 * of failing on "already exists". The name is published in `parameterName`.
 */
export class MappingBucket extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly accessLogs: s3.Bucket;
  public readonly parameter: ssm.StringParameter;

  constructor(scope: Construct, id: string, props: MappingBucketProps) {
    super(scope, id);
    if (!Number.isInteger(props.keptVersions) || props.keptVersions < 1 || props.keptVersions > 100) {
      throw new Error(`MappingBucket: keptVersions ${props.keptVersions} must be 1-100`);
    }
    if (props.namePrefix.length > 50)
      throw new Error(`MappingBucket: namePrefix \`${props.namePrefix}\` is longer than 50 characters (the bucket name adds 13)`);
    this.accessLogs = new LogBucket(this, 'AccessLogs', {
      receives: "the mapping bucket's server access logs",
      whyNotKms: 'S3 server access logs are delivered only to buckets encrypted with SSE-S3, not SSE-KMS.',
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
    });
    this.bucket = new s3.Bucket(this, 'Bucket', {
      bucketName: perCreationBucketName(props.namePrefix),
      versioned: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'mapping-bucket/',
      lifecycleRules: [
        { noncurrentVersionsToRetain: props.keptVersions, noncurrentVersionExpiration: Duration.days(1) },
        // served/: each router task rewrites its report every few seconds (a heartbeat), so old
        // versions are worthless after a day, and a report nobody refreshed for a week belongs to a
        // task that is gone (killed without saying it stopped, or a group scaled to 0). Readers
        // judge a report by its age anyway; this only keeps the prefix from growing.
        {
          id: 'ServedReports',
          prefix: SERVED_PREFIX,
          expiration: Duration.days(SERVED_REPORT_EXPIRY_DAYS),
          noncurrentVersionExpiration: Duration.days(1),
        },
        // The delete markers those expirations leave (ExpiredObjectDeleteMarker cannot share a rule with Days).
        { id: 'ServedReportMarkers', prefix: SERVED_PREFIX, expiredObjectDeleteMarker: true },
      ],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const [id, reason] of Object.entries({
      'ControlTower::CT.S3.PR.4':
        'Routers poll their group pointer (a conditional GET every few seconds) rather than reacting to events, so a lost event can never leave a router behind.',
      'ControlTower::CT.S3.PR.9':
        'Published versions are never overwritten (conditional writes, If-None-Match) and old versions are kept per `router.keptVersions`; Object Lock would also stop the lifecycle that bounds them.',
      'ControlTower::CT.S3.PR.10':
        'SSE-S3: every router task role of the region reads it; a KMS key would need a decrypt grant for each, kept in sync with the router groups.',
    }))
      Validations.of(this.bucket).acknowledge({ id, reason });
    // Nobody but the writers writes, whatever their own policies say; under served/ nobody but the
    // router groups' task roles, and each group's prefix nobody but that group's role.
    const denyWritesExcept = (where: { resources: string[] } | { notResources: string[] }, principalArns: string | string[]) => {
      this.bucket.addToResourcePolicy(
        new iam.PolicyStatement({
          effect: iam.Effect.DENY,
          principals: [new iam.AnyPrincipal()],
          actions: ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion', 's3:PutObjectAcl'],
          ...where,
          conditions: { ArnNotEquals: { 'aws:PrincipalArn': principalArns } },
        }),
      );
    };
    denyWritesExcept({ notResources: [this.bucket.arnForObjects(`${SERVED_PREFIX}*`)] }, [...props.writerRoleArns]);
    const routerTaskRoles = props.routerTaskRoles ?? [];
    if (routerTaskRoles.length > 0)
      denyWritesExcept(
        { resources: [this.bucket.arnForObjects(`${SERVED_PREFIX}*`)] },
        routerTaskRoles.map((r) => r.roleArn),
      );
    for (const { group, roleArn } of routerTaskRoles)
      denyWritesExcept({ resources: [this.bucket.arnForObjects(`${servedPrefix(group)}*`)] }, roleArn);
    this.parameter = new ssm.StringParameter(this, 'Name', {
      parameterName: props.parameterName,
      description: "The mapping bucket of this region (cellctl mapping publish writes every region's)",
      stringValue: this.bucket.bucketName,
    });
  }
}

export interface MappingPublisherProps {
  /** Name of the publisher role (what `cellctl mapping publish` runs as). */
  readonly roleName: string;
  /** `router.mappingBucket`: the role may write buckets `<prefix>-*` of this account, in every region. */
  readonly bucketNamePrefix: string;
  /** Regions with a mapping bucket, and the parameter naming it in each. */
  readonly regions: readonly string[];
  readonly parameterName: string;
  /**
   * With lanes: the SSM parameter path (`/<app>/router/lanes`) whose lane NLB names `cellctl lanes
   * where` reads in every region.
   * @default - no lanes
   */
  readonly laneParameters?: string;
  /**
   * The parameter naming the router's entry NLB in each region (without lanes), which `cellctl zone
   * drain` shifts away from a zone; with lanes each lane's is under `laneParameters`.
   * @default - none
   */
  readonly loadBalancerParameter?: string;
  /** Each router region's alarm name prefix: `cellctl zone undrain` bakes on those alarms (DescribeAlarms). @default - none */
  readonly routerAlarmPrefixes?: Readonly<Record<string, string>>;
}

/**
 * The one role that publishes mappings, to every region's bucket (IAM is global, so one region's
 * stack holds it). Exactly what publish, rollback and history do: find each region's bucket,
 * read, conditional put, list the versions.
 */
export class MappingPublisher extends Construct {
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: MappingPublisherProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.role = new iam.Role(this, 'Role', {
      roleName: props.roleName,
      description: 'Publishes mapping documents to every region (cellctl mapping publish / rollback)',
      assumedBy: new iam.AccountRootPrincipal(),
    });
    const buckets = `arn:${Aws.PARTITION}:s3:::${props.bucketNamePrefix}-*`;
    const ownAccount = { StringEquals: { 's3:ResourceAccount': stack.account } };
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [`${buckets}/mappings/*`, `${buckets}/groups/*`, `${buckets}/${LANES_PREFIX}*`, `${buckets}/${ZONES_PREFIX}*`],
        conditions: ownAccount,
      }),
    );
    // S3 answers a missing key with 403, not 404, to a caller without s3:ListBucket (GetObject API
    // reference, "Permissions"); the store lists the key to tell "missing" from "denied", so the
    // first publish into an empty bucket works. Hence list under both prefixes.
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [buckets],
        conditions: {
          ...ownAccount,
          StringLike: { 's3:prefix': [VERSIONS_PREFIX, GROUPS_PREFIX, LANES_PREFIX, ZONES_PREFIX].map((prefix) => `${prefix}*`) },
        },
      }),
    );
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['ssm:GetParameter'],
        resources: props.regions.map((region) =>
          stack.formatArn({ service: 'ssm', region, resource: 'parameter', resourceName: props.parameterName.replace(/^\//, '') }),
        ),
      }),
    );
    // `cellctl zone drain|undrain` (lib/adapters/aws/zonal-shift.ts): the region's router NLBs shifted
    // away from a zone and back. Their names come with their stacks, so the grant is this account's
    // network load balancers in the router regions; listing shifts takes no resource (Service
    // Authorization Reference, "Actions defined by Amazon Application Recovery Controller - Zonal Shift").
    const loadBalancers = props.regions.map((region) =>
      stack.formatArn({ service: 'elasticloadbalancing', region, resource: 'loadbalancer', resourceName: 'net/*' }),
    );
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['arc-zonal-shift:StartZonalShift', 'arc-zonal-shift:UpdateZonalShift', 'arc-zonal-shift:CancelZonalShift'],
        resources: loadBalancers,
      }),
    );
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['arc-zonal-shift:ListZonalShifts'], resources: ['*'] }));
    for (const resource of loadBalancers)
      acknowledgeWildcard(
        this.role,
        resource,
        "cellctl zone drain shifts the region's router NLBs (named by their stacks) away from a zone and back; this account's NLBs only.",
      );
    acknowledgeWildcard(this.role, '*', 'arc-zonal-shift:ListZonalShifts takes no resource; it finds the active shift to update or cancel.');
    if (props.routerAlarmPrefixes) {
      const alarms = Object.entries(props.routerAlarmPrefixes).map(([region, prefix]) =>
        stack.formatArn({ service: 'cloudwatch', region, resource: 'alarm', resourceName: `${prefix}-*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
      );
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['cloudwatch:DescribeAlarms'], resources: alarms }));
      for (const resource of alarms)
        acknowledgeWildcard(
          this.role,
          resource,
          "cellctl zone undrain bakes each step on the region's router alarms (group health, each cell's errors); read only.",
        );
    }
    if (props.loadBalancerParameter)
      this.role.addToPolicy(
        new iam.PolicyStatement({
          actions: ['ssm:GetParameter'],
          resources: props.regions.map((region) =>
            stack.formatArn({ service: 'ssm', region, resource: 'parameter', resourceName: props.loadBalancerParameter!.replace(/^\//, '') }),
          ),
        }),
      );
    if (props.laneParameters) {
      const lanes = props.regions.map((region) =>
        stack.formatArn({ service: 'ssm', region, resource: 'parameter', resourceName: `${props.laneParameters!.replace(/^\//, '')}/*` }),
      );
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['ssm:GetParameters'], resources: lanes }));
      for (const resource of lanes)
        acknowledgeWildcard(
          this.role,
          resource,
          "`cellctl lanes where` reads each lane's NLB name (<path>/<lane>/dns-name), written by the lane stacks; the lanes' parameters only.",
        );
    }
    for (const [resource, reason] of [
      [
        `${buckets}/mappings/*`,
        "Every published version is a new object mappings/v<N>.json, in every region's bucket (named <prefix>-<stack id part>); this account's buckets only.",
      ],
      [
        `${buckets}/groups/*`,
        "The publisher writes the pointer of every router group (groups/<group>/mapping.json) in every region's bucket; this account's buckets only.",
      ],
      [
        `${buckets}/${LANES_PREFIX}*`,
        "The lane assignments (lanes/assignments.json, cellctl lanes assign) live in the home region's bucket, replaced with If-Match; this account's buckets only.",
      ],
      [
        `${buckets}/${ZONES_PREFIX}*`,
        "Each region's zones document (zones/<region>.json, cellctl zone drain) lives in that region's bucket, replaced with If-Match; this account's buckets only.",
      ],
      [
        buckets,
        "Each region's mapping bucket is named <prefix>-<part of its stack id> (a retried first deploy gets a new one); list is limited to mappings/, groups/, lanes/ and zones/ in this account.",
      ],
    ])
      acknowledgeWildcard(this.role, resource, reason);
  }
}

export interface MappingSeedProps {
  readonly bucket: s3.IBucket;
  /** The document every key gets when it does not exist yet (the fleet's version 1). */
  readonly documentText: string;
  readonly version: number;
  /** Router groups whose pointers are seeded. */
  readonly groups: readonly string[];
  /** What the seeding runs as: must be one of the bucket's writers. */
  readonly role: iam.IRole;
  /**
   * Where the seeded objects' custom resources go (a nested stack: each carries the whole document);
   * the handler stays beside the role, whose policy grants it its log group.
   * @default - this construct
   */
  readonly objectsScope?: Construct;
}

/** Where the seed handler's source is; bundled at synth with the project's own `@aws-sdk/client-s3`. */
const SEED_HANDLER = path.join(__dirname, '..', '..', 'runtime', 'handlers', 'mapping-seed-handler.ts');

/**
 * Seeds a new mapping bucket so the first deploy needs no hand step: a router task is ready only once
 * it applied a mapping, the NLB sends traffic only to ready tasks, and ECS fails a service whose
 * tasks never become healthy. On creation, writes `mappings/v<version>.json` and each group's pointer
 * with `If-None-Match: *` (a group added later gets the document the existing groups are on, the
 * lowest version among their pointers, rather than version 1): an object that exists (an operator's
 * publish) is left alone; S3 answers
 * 412 PreconditionFailed, which is expected here (S3 User Guide, "conditional writes",
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html). Update and delete
 * change nothing: later documents are the operator's, and the bucket is retained.
 *
 * The handler (`mapping-seed-handler.ts`) is bundled at synth by esbuild from node_modules, with this
 * project's `@aws-sdk/client-s3` inside, so the condition does not depend on the SDK version the
 * Lambda runtime ships (an SDK without `IfNoneMatch` would drop it and overwrite). It answers
 * CloudFormation on every path; `ServiceTimeout` bounds the wait if it cannot (CloudFormation's
 * default is an hour; AWS::CloudFormation::CustomResource,
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudformation-customresource.html).
 *
 * Each key's resource is `<key id>/Put`: the same page says a custom resource's `ServiceToken` cannot
 * be updated, so in a stack whose seeds are AwsCustomResources (`<key id>/Resource`) they are replaced:
 * the new ones create (412 on the existing objects: kept) and the old ones' delete does nothing.
 */
export class MappingSeed extends Construct {
  public readonly objects: readonly CustomResource[];
  /** The keys seeded: the version object, then each group's pointer. */
  public readonly keys: readonly string[];
  public readonly handler: lambdaNodejs.NodejsFunction;

  constructor(scope: Construct, id: string, props: MappingSeedProps) {
    super(scope, id);
    const keys = [versionKey(props.version), ...props.groups.map(groupKey)];
    this.keys = keys;
    this.handler = bundledHandler(this, {
      entry: SEED_HANDLER,
      role: props.role,
      description: 'Seeds the mapping bucket on create (If-None-Match: *), never over an existing object',
      logs: 'the mapping seed (bucket, key, written or already there; no document content)',
      calls: 'writing the seed objects to S3',
    });
    // A group's pointer follows the other groups' (the document in force) when they exist: a group
    // added after the fleet has published starts on the current mapping, not on version 1. Reading
    // them needs the pointers' listing (a missing key is 403 without it) and the pointers themselves.
    props.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [props.bucket.bucketArn],
        conditions: { StringEquals: { 's3:prefix': GROUPS_PREFIX } },
      }),
    );
    const pointers = props.bucket.arnForObjects(`${GROUPS_PREFIX}*`);
    props.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [pointers] }));
    acknowledgeWildcard(
      props.role,
      pointers,
      'The seed of a group added later copies the pointer of the groups already there (reads only); group names come from the fleet config, the prefix holds only their pointers.',
    );
    this.objects = keys.map(
      (key) =>
        new CustomResource(new Construct(props.objectsScope ?? this, key.replace(/[^A-Za-z0-9]/g, '')), 'Put', {
          resourceType: 'Custom::MappingSeed',
          serviceToken: this.handler.functionArn,
          // The handler answers within its 2 minutes (it aborts a hung S3 call); this bounds a crash.
          serviceTimeout: Duration.minutes(5),
          properties: {
            Bucket: props.bucket.bucketName,
            Key: key,
            Body: props.documentText,
            ContentType: 'application/json',
            ...(key.startsWith(GROUPS_PREFIX) ? { Follow: GROUPS_PREFIX } : {}),
          },
        }),
    );
  }
}

/**
 * Lets `role` (a router group's task role) read its group's pointer and the immutable versions of
 * its region's mapping bucket, and list its pointer's key, nothing else.
 */
export function grantMappingRead(role: iam.IRole, bucketName: string, group: string, region?: string): void {
  const bucket = s3BucketArn(role, bucketName);
  // The region's zones document (zones/<region>.json), which every group of the region follows, and
  // listing exactly its key, as for the pointer: a region without one is "every zone at its full share".
  if (region) {
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`${bucket}/${zonesKey(region)}`] }));
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket], conditions: { StringEquals: { 's3:prefix': zonesKey(region) } } }),
    );
  }
  const versions = `${bucket}/mappings/*`;
  acknowledgeWildcard(
    role,
    versions,
    'The immutable published versions (mappings/v<N>.json) are read-only to routers; their names are not known in advance.',
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:GetObject'],
      resources: [`${bucket}/${groupKey(group)}`, versions],
    }),
  );
  // S3 answers a GET of a missing key with 403, not 404, to a caller without s3:ListBucket (GetObject
  // API reference, "Permissions", https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html):
  // listing exactly the pointer's key lets the agent tell "nothing published yet" from "denied"
  // (S3MappingSource, lib/runtime/router/sources.ts). Nothing else of the bucket can be listed.
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [bucket],
      conditions: { StringEquals: { 's3:prefix': groupKey(group) } },
    }),
  );
}

/**
 * Lets `role` (a router group's task role) write its tasks' reports of the version they serve,
 * `served/<group>/<task id>.json` (lib/runtime/router/served.ts), and nothing else: the task id is known
 * only at run time, so the grant is the group's prefix. PutObject only: a stopping task overwrites
 * its report (`stopped`), it never deletes it; the bucket's lifecycle expires what nobody refreshes.
 */
export function grantServedReport(role: iam.IRole, bucketName: string, group: string): void {
  const reports = `${s3BucketArn(role, bucketName)}/${servedPrefix(group)}*`;
  acknowledgeWildcard(
    role,
    reports,
    "Each router task writes its own report served/<group>/<task id>.json; task ids are made by ECS at run time, so the grant is the group's prefix (the bucket policy denies every other group's).",
  );
  role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [reports] }));
}

/** The ARN of bucket `bucketName` in the partition of `scope`'s stack. */
function s3BucketArn(scope: IConstruct, bucketName: string): string {
  return Stack.of(scope).formatArn({ service: 's3', region: '', account: '', resource: bucketName });
}

/** Acknowledges cdk-nag's finding on a wildcard `resource` in `role`'s policy, with why it cannot be narrower. */
function acknowledgeWildcard(role: iam.IRole, resource: string, reason: string): void {
  Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${nagResource(Stack.of(role), resource)}]`, reason });
}

/** How cdk-nag names a resource in a finding: references as `<LogicalId>` / `<LogicalId.Attr>`. */
function nagResource(stack: Stack, value: string): string {
  const resolved = stack.resolve(value) as unknown;
  const part = (p: unknown): string => {
    if (typeof p === 'string') return p;
    const o = p as Record<string, unknown>;
    if (o.Ref) return `<${String(o.Ref)}>`;
    if (o['Fn::GetAtt']) return `<${(o['Fn::GetAtt'] as string[]).join('.')}>`;
    return JSON.stringify(p);
  };
  if (typeof resolved === 'string') return resolved;
  const join = (resolved as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  return join ? join[1].map(part).join(join[0]) : part(resolved);
}
