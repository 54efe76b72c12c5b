import { Stack, Validations } from 'aws-cdk-lib';
import * as cr from 'aws-cdk-lib/custom-resources';

/**
 * Acknowledges, on the stack-wide Lambda that CDK's `AwsCustomResource` installs in `stack` (if
 * any), the Control Tower findings it raises: it runs only while CloudFormation deploys the stack
 * and calls AWS APIs (SSM reads of the cells' endpoint service names through a role in each cell
 * account), so it needs no path into the VPC, and its log group holds those calls' results only.
 * (The mapping seed has its own bundled handler, `MappingSeed`.) Call after the custom resources
 * are created.
 */
export function acknowledgeCustomResourceProvider(stack: Stack): void {
  const provider = stack.node.tryFindChild(`AWS${cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace(/-/g, '')}`);
  if (!provider) return;
  Validations.of(provider).acknowledge({
    id: 'ControlTower::CT.LAMBDA.PR.3',
    reason: 'CDK\'s AwsCustomResource provider: runs only while CloudFormation deploys the stack, calling AWS APIs (SSM, STS) on public endpoints; it handles no cell traffic and needs no path into a VPC.',
  });
  const logGroup = provider.node.tryFindChild('LogGroup');
  if (logGroup) {
    Validations.of(logGroup).acknowledge({
      id: 'ControlTower::CT.CLOUDWATCH.PR.3',
      reason: 'Deploy-time log of CDK\'s AwsCustomResource provider (API call names and errors, no cell data); CloudWatch Logs encrypts it at rest with its own key.',
    });
  }
}
