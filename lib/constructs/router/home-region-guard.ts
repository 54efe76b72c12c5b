import * as path from 'path';
import { CustomResource, Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { bundledHandler } from '../shared/bundled-handler';

export interface HomeRegionGuardProps {
  /** `router.homeRegion` of this deploy. */
  readonly homeRegion: string;
  /** The parameter, in this stack's region, that keeps the home region the stack was deployed with. */
  readonly parameterName: string;
  /** The router stack's custom resource role: the guard reads the parameter as it. */
  readonly role: iam.Role;
}

/**
 * Refuses, at deploy time, a change of `router.homeRegion`, which would move the publisher and move
 * operator roles and the move bucket (with any move in flight) to another region's stack: every
 * router stack keeps the home region it was deployed with in `parameterName`, written after the guard
 * (`Custom::RouterHomeRegionGuard`, home-region-guard-handler.ts) has compared it with this deploy's.
 * A different value fails the update, and CloudFormation rolls the stack back before anything moved
 * (resources leave a stack only in a successful update's cleanup). Synth cannot tell: it has no
 * record of earlier deploys. Make the home region's resources depend on `guard`.
 */
export class HomeRegionGuard extends Construct {
  public readonly guard: CustomResource;
  public readonly parameter: ssm.StringParameter;

  constructor(scope: Construct, id: string, props: HomeRegionGuardProps) {
    super(scope, id);
    const handler = bundledHandler(this, {
      entry: path.join(__dirname, '..', '..', 'runtime', 'handlers', 'home-region-guard-handler.ts'),
      role: props.role,
      description: 'Refuses a router deploy that changes router.homeRegion (compares the home region this stack was deployed with)',
      logs: 'the home region guard (parameter, previous and asked home region)',
      calls: "reading this stack's own home-region parameter (SSM)",
    });
    const parameterArn = Stack.of(this).formatArn({ service: 'ssm', resource: 'parameter', resourceName: props.parameterName.replace(/^\//, '') });
    props.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['ssm:GetParameter'], resources: [parameterArn] }));
    this.guard = new CustomResource(this, 'Check', {
      resourceType: 'Custom::RouterHomeRegionGuard',
      serviceToken: handler.functionArn,
      serviceTimeout: Duration.minutes(5),
      // GuardProperties (home-region-guard-handler.ts).
      properties: { ParameterName: props.parameterName, HomeRegion: props.homeRegion },
    });
    this.parameter = new ssm.StringParameter(this, 'Parameter', {
      parameterName: props.parameterName,
      stringValue: props.homeRegion,
      description: 'router.homeRegion this router stack was deployed with (read by its home region guard before each deploy)',
    });
    // Written only after the guard read the value of the previous deploy.
    this.parameter.node.addDependency(this.guard);
  }
}
