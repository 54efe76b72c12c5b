import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { CellQueues } from '../../../lib/constructs/cell';
import { TestStack } from '../../support/cell';

describe('CellQueues', () => {
  let template: Template;
  beforeAll(() => {
    const stack = new TestStack();
    new CellQueues(stack, 'Queues', { maxReceiveCount: 3, encryptionKey: new kms.Key(stack, 'CellKey') });
    template = Template.fromStack(stack);
  });

  it('encrypts both queues with the cell key', () => {
    template.resourceCountIs('AWS::SQS::Queue', 2);
    expect(
      Object.keys(
        template.findResources('AWS::SQS::Queue', { Properties: { KmsMasterKeyId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^CellKey'), 'Arn'] } } }),
      ),
    ).toHaveLength(2);
  });

  it('sends poison messages to the dead-letter queue', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('DeadLetter'), 'Arn'] }, maxReceiveCount: 3 },
    });
  });

  it('denies every request that is not over TLS', () => {
    const policies = template.findResources('AWS::SQS::QueuePolicy');
    expect(Object.keys(policies)).toHaveLength(2);
    for (const policy of Object.values(policies)) {
      expect(policy.Properties.PolicyDocument.Statement).toEqual(
        expect.arrayContaining([expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      );
    }
  });

  it('rejects a receive count SQS does not accept', () => {
    const stack = new TestStack();
    expect(() => new CellQueues(stack, 'Q', { maxReceiveCount: 0, encryptionKey: new kms.Key(stack, 'CellKey') })).toThrow(/maxReceiveCount 0/);
  });
});
