import { Template } from 'aws-cdk-lib/assertions';
import { FARGATE_CELL, synthBareCells } from '../../support/cell';

describe('CellKey', () => {
  let template: Template;
  let keyId: string;
  beforeAll(() => {
    template = synthBareCells([FARGATE_CELL])[FARGATE_CELL].template;
    [keyId] = Object.keys(template.findResources('AWS::KMS::Key'));
  });

  it('is one rotated customer-managed key per cell, kept on delete', () => {
    template.resourceCountIs('AWS::KMS::Key', 1);
    template.hasResource('AWS::KMS::Key', { Properties: { EnableKeyRotation: true }, DeletionPolicy: 'Retain' });
  });

  it('encrypts the cell data, secret, logs (flow, WAF, workload, mover), queues and alarm topic', () => {
    const ref = { 'Fn::GetAtt': [keyId, 'Arn'] };
    template.hasResourceProperties('AWS::RDS::DBCluster', { KmsKeyId: ref });
    template.hasResourceProperties('AWS::SecretsManager::Secret', { KmsKeyId: ref });
    expect(Object.keys(template.findResources('AWS::SQS::Queue', { Properties: { KmsMasterKeyId: ref } }))).toHaveLength(2);
    const encrypted = Object.keys(template.findResources('AWS::Logs::LogGroup', { Properties: { KmsKeyId: ref } }));
    expect(encrypted.sort()).toEqual(Object.keys(template.findResources('AWS::Logs::LogGroup')).sort());
    expect(encrypted.map((id) => id.replace(/[0-9A-F]{8}$/, '')).sort()).toEqual([
      'CellComputeLogs',
      'CellEntryWafLogs',
      'CellMoverLogs',
      'CellNetworkFlowLogs',
    ]);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: ref });
  });
});
