import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks, NIST80053R5Checks } from 'cdk-nag';
import { LogBucket } from '../../../lib/constructs/shared/log-bucket';
import { cdkApp } from '../../support/fleet';

describe('LogBucket', () => {
  let stack: Stack;
  let template: Template;
  beforeAll(() => {
    const app = cdkApp();
    stack = new Stack(app, 'Logs', { env: { account: '111111111111', region: 'eu-west-1' } });
    new LogBucket(stack, 'AccessLogs', { receives: 'test logs', whyNotKms: 'delivery takes SSE-S3 only' });
    new LogBucket(stack, 'ServerLogs', {
      receives: 'server logs',
      whyNotKms: 'SSE-S3 only',
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
    });
    template = Template.fromStack(stack);
  });

  it('is the bucket itself: its construct id is the one given, so logical ids stay what hand-written buckets had', () => {
    const ids = Object.keys(template.findResources('AWS::S3::Bucket'));
    expect(ids).toHaveLength(2);
    expect(ids.some((id) => /^AccessLogs[0-9A-F]{8}$/.test(id))).toBe(true);
    expect(ids.some((id) => /^ServerLogs[0-9A-F]{8}$/.test(id))).toBe(true);
  });

  it('is SSE-S3, private, versioned, expired after a year and retained', () => {
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
        VersioningConfiguration: { Status: 'Enabled' },
        LifecycleConfiguration: { Rules: [{ ExpirationInDays: 365, NoncurrentVersionExpiration: { NoncurrentDays: 30 }, Status: 'Enabled' }] },
      },
    });
    const owned = Object.values(template.findResources('AWS::S3::Bucket')).map((b) => b.Properties.OwnershipControls?.Rules?.[0]?.ObjectOwnership);
    expect(owned.sort()).toEqual(['BucketOwnerPreferred', undefined]);
  });

  it('refuses requests without TLS', () => {
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
  });

  it('acknowledges what every log destination raises, so AwsSolutions and NIST leave nothing open on it', () => {
    expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
    expect(new NIST80053R5Checks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
  });
});
