/**
 * The AWS limits a fleet can reach, each with the page that states it. Pure data: the template
 * checks (./templates.ts), fleet validation (lib/domain/fleet/validate.ts) and the ceiling in docs/performance.md all
 * read their numbers from here, so a limit is written once.
 */
export interface AwsLimit {
  /** What is limited, as the page says it. */
  readonly what: string;
  readonly value: number;
  readonly unit: 'characters' | 'bytes' | 'count' | 'minutes';
  /** A quota the account can have raised (Service Quotas); the value here is AWS's default. */
  readonly adjustable: boolean;
  /** The AWS documentation page that states the limit. */
  readonly source: string;
  /** What to change in this project when a template reaches it. */
  readonly fix: string;
}

const IAM_QUOTAS = 'https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html';
const CFN_QUOTAS = 'https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html';
const SPLIT = 'split the fleet across pipelines, or its cells across more regions (docs/performance.md, "How many cells one pipeline holds")';

export const LIMITS = {
  templateBytes: {
    what: 'CloudFormation template body uploaded through S3',
    value: 1_000_000,
    unit: 'bytes',
    adjustable: false,
    source: CFN_QUOTAS,
    fix: `a template grows with the cells it names: ${SPLIT}`,
  },
  deployActionTemplateBytes: {
    what: "template a CodePipeline CloudFormation deploy action is reported to accept (a pipeline stage's stack; its nested stacks' templates are CloudFormation's, 1 MB)",
    value: 512_000,
    unit: 'bytes',
    adjustable: false,
    source: 'https://github.com/aws-cloudformation/cloudformation-coverage-roadmap/issues/1023',
    fix: 'move what grows with the cells into nested stacks of their own (as the router keeps its cell links, dashboard pages and mapping seed)',
  },
  resources: {
    what: 'CloudFormation resources per stack',
    value: 500,
    unit: 'count',
    adjustable: false,
    source: CFN_QUOTAS,
    fix: `move per-cell resources into nested stacks (as the router's cell links are), or ${SPLIT}`,
  },
  outputs: {
    what: 'CloudFormation outputs per stack',
    value: 200,
    unit: 'count',
    adjustable: false,
    source: CFN_QUOTAS,
    fix: 'hand values over in SSM parameters instead of outputs',
  },
  parameters: {
    what: 'CloudFormation parameters per stack',
    value: 200,
    unit: 'count',
    adjustable: false,
    source: CFN_QUOTAS,
    fix: 'read values from SSM parameters at deploy time instead of passing them as parameters',
  },
  managedPolicy: {
    what: 'IAM managed policy document (whitespace not counted)',
    value: 6_144,
    unit: 'characters',
    adjustable: false,
    source: IAM_QUOTAS,
    fix: "grant by name pattern bounded by the organization (set pipeline.organizationId) instead of listing every cell's role or account",
  },
  roleInlinePolicies: {
    what: 'IAM inline policies of one role together (whitespace not counted)',
    value: 10_240,
    unit: 'characters',
    adjustable: false,
    source: IAM_QUOTAS,
    fix: "grant by name pattern bounded by the organization (set pipeline.organizationId) instead of listing every cell's role or account",
  },
  managedPoliciesPerRole: {
    what: 'managed policies attached to one IAM role',
    value: 10,
    unit: 'count',
    adjustable: true,
    source: IAM_QUOTAS,
    fix: "merge statements: a role's statements grow with the fleet only where they list cells",
  },
  trustPolicy: {
    what: 'IAM role trust policy (whitespace not counted)',
    value: 2_048,
    unit: 'characters',
    adjustable: true,
    source: IAM_QUOTAS,
    fix: 'trust accounts or the organization, not one role per cell',
  },
  roleName: {
    what: 'IAM role name',
    value: 64,
    unit: 'characters',
    adjustable: false,
    source: IAM_QUOTAS,
    fix: 'shorten `app` or the cell ids (every derived name is `<app>-<cell>-…`)',
  },
  policyName: {
    what: 'IAM policy name',
    value: 128,
    unit: 'characters',
    adjustable: false,
    source: IAM_QUOTAS,
    fix: 'shorten `app` or the cell ids',
  },
  bucketPolicy: {
    what: 'S3 bucket policy',
    value: 20_480,
    unit: 'bytes',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-policies.html',
    fix: 'name principals by pattern bounded by the organization (`aws:PrincipalOrgID`, set pipeline.organizationId) instead of listing every cell account',
  },
  keyPolicy: {
    what: 'KMS key policy',
    value: 32_768,
    unit: 'bytes',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/kms/latest/developerguide/resource-limits.html',
    fix: 'name principals by pattern bounded by the organization instead of listing every cell account',
  },
  topicPolicy: {
    what: 'SNS topic policy',
    value: 30_720,
    unit: 'bytes',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-language-api-permissions-reference.html',
    fix: 'name principals by organization instead of by account',
  },
  queuePolicy: {
    what: 'SQS queue policy',
    value: 8_192,
    unit: 'bytes',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-policies.html',
    fix: 'name principals by organization instead of by account',
  },
  securityGroupRules: {
    what: 'inbound or outbound rules per security group',
    value: 60,
    unit: 'count',
    adjustable: true,
    source: 'https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html',
    fix: 'allow a security group or a prefix list instead of one rule per cell CIDR',
  },
  interfaceEndpointsPerVpc: {
    what: 'interface and Gateway Load Balancer endpoints per VPC',
    value: 50,
    unit: 'count',
    adjustable: true,
    source: 'https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-limits-endpoints.html',
    fix: 'request the increase in the router account of every region (docs/limits.md, "Raising a quota") and declare the granted value in quotas.interfaceEndpointsPerVpc',
  },
  dashboardWidgets: {
    what: 'widgets per CloudWatch dashboard',
    value: 500,
    unit: 'count',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_limits.html',
    fix: 'page the dashboard (the router dashboards hold 150 cells a page)',
  },
  compositeAlarmRule: {
    what: 'composite alarm rule expression',
    value: 10_240,
    unit: 'characters',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html',
    fix: 'compose composite alarms of composite alarms instead of naming every cell in one rule',
  },
  ssmParameterValue: {
    what: 'SSM Parameter Store value (standard tier; 8 KB advanced)',
    value: 4_096,
    unit: 'characters',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html',
    fix: 'keep per-cell lists out of one parameter (one parameter per cell), or use the advanced tier',
  },
  lambdaEnvironment: {
    what: 'Lambda environment variables together',
    value: 4_096,
    unit: 'bytes',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html',
    fix: 'pass lists through an SSM parameter or the event, not the environment',
  },
  pipelineStages: {
    what: 'CodePipeline stages per pipeline',
    value: 50,
    unit: 'count',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/codepipeline/latest/userguide/limits.html',
    fix: `raise waves.maxCellsPerWave or waves.growthFactor, or ${SPLIT}`,
  },
  actionsPerStage: {
    what: 'CodePipeline actions per stage',
    value: 50,
    unit: 'count',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/codepipeline/latest/userguide/limits.html',
    fix: 'lower waves.maxCellsPerWave',
  },
  codeBuildTimeout: {
    // CodeBuild itself allows 36 hours, but every CodeBuild project here runs as a pipeline action,
    // which CodePipeline times out after 8 hours ("CodeBuild build action and test action: 8 hours").
    what: 'CodePipeline CodeBuild action timeout',
    value: 480,
    unit: 'minutes',
    adjustable: false,
    source: 'https://docs.aws.amazon.com/codepipeline/latest/userguide/limits.html',
    fix: `asset publishing is sized from the fleet (lib/constructs/pipeline/publishing.ts: more destinations at once); past 8 hours ${SPLIT}`,
  },
} as const satisfies Record<string, AwsLimit>;

export type LimitId = keyof typeof LIMITS;

/** Service Quotas codes of the adjustable quotas a fleet declares (`quotas` in cells.config.ts). */
export const QUOTA_CODES = {
  interfaceEndpointsPerVpc: { serviceCode: 'vpc', quotaCode: 'L-29B6F2EB' },
} as const;

/**
 * Quotas the fleet's accounts have been granted, where they differ from AWS's defaults; every
 * check reads the granted value. What `quotas` in cells.config.ts declares.
 */
export interface GrantedQuotas {
  /** Interface endpoints per VPC in the router account, every region of the fleet. @default 50 */
  readonly interfaceEndpointsPerVpc?: number;
}

/** The value a check holds a template to: the granted quota for an adjustable one, else AWS's. */
export function limitValue(id: LimitId, quotas: GrantedQuotas = {}): number {
  if (id === 'interfaceEndpointsPerVpc' && quotas.interfaceEndpointsPerVpc !== undefined) return quotas.interfaceEndpointsPerVpc;
  return LIMITS[id].value;
}
