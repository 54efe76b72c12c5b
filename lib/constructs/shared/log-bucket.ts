import { Aws, Duration, Fn, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/**
 * `<prefix>-<suffix>`, the suffix being the last group of the stack id's UUID
 * (`arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<uuid>`), which is new on every stack
 * creation: a first create that failed and rolled back leaves its retained bucket behind, and the
 * retry names a new one instead of failing on "already exists". The suffix is 12 characters, so the
 * prefix may have at most 50 (S3's limit is 63).
 */
export function perCreationBucketName(prefix: string): string {
  return `${prefix}-${Fn.select(4, Fn.split('-', Fn.select(2, Fn.split('/', Aws.STACK_ID))))}`;
}

export interface LogBucketProps {
  /** What the log delivery service writes here, for the acknowledgements: `the router NLB's access logs`. */
  readonly receives: string;
  /** Why the bucket is SSE-S3 and not SSE-KMS, for the encryption findings (it depends on the delivery service). */
  readonly whyNotKms: string;
  /** @default - the bucket's own default (`BucketOwnerEnforced` on a new bucket) */
  readonly objectOwnership?: s3.ObjectOwnership;
}

/**
 * A bucket that receives access logs (ELB's or S3 server access logs): SSE-S3 (the only encryption
 * ELB log delivery supports), public access blocked, TLS-only, versioned (Control Tower CT.S3.PR.11:
 * an overwritten or deleted log object stays recoverable for 30 days), expired after a year, retained
 * when its stack goes. It acknowledges the findings every log destination raises, with why.
 *
 * It *is* the `s3.Bucket`, not a wrapper around one, so the id given here stays the bucket's construct
 * id and its logical id is the one the three hand-written buckets had (`AccessLogs`).
 */
export class LogBucket extends s3.Bucket {
  constructor(scope: Construct, id: string, props: LogBucketProps) {
    super(scope, id, {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: true,
      objectOwnership: props.objectOwnership,
      lifecycleRules: [{ expiration: Duration.days(365), noncurrentVersionExpiration: Duration.days(30) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const recurse = `This bucket receives ${props.receives}; logging its own access would recurse, and a second log bucket would carry the same finding.`;
    for (const [rule, reason] of Object.entries({
      'AwsSolutions-S1': recurse,
      'NIST.800.53.R5-S3BucketLoggingEnabled': recurse,
      'ControlTower::CT.S3.PR.2': recurse,
      'NIST.800.53.R5-S3DefaultEncryptionKMS': props.whyNotKms,
      'ControlTower::CT.S3.PR.10': props.whyNotKms,
      'NIST.800.53.R5-S3BucketReplicationEnabled':
        'Access logs are versioned and kept a year in the account and region that produced them; a replica in another region would be a second copy of them to secure and expire.',
      'ControlTower::CT.S3.PR.4': `Only the log delivery service writes here (${props.receives}); nothing consumes per-object events of a log bucket.`,
      'ControlTower::CT.S3.PR.9':
        'Versioned, TLS-only, public access blocked and expired after a year by lifecycle; Object Lock needs a retention mode each organisation chooses, and would keep logs past the removal of what they log.',
    }))
      Validations.of(this).acknowledge({ id: rule, reason });
  }
}
