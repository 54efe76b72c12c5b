// The Lambda handler behind `Custom::CellEndpointServiceName` (CellLink, cell-links.ts): reads a
// cell's endpoint service name from the SSM parameter in the cell's account and region, through the
// cell's reader role (CellEndpointRecord, lib/constructs/shared/endpoint-record.ts). Bundled at synth (esbuild,
// NodejsFunction) with this project's `@aws-sdk/client-sts` and `@aws-sdk/client-ssm`.
//
// On a first deploy the reader role and its trust are seconds old, and IAM may refuse the
// AssumeRole, or the read, for a while: both are retried on AccessDenied for up to a minute
// (withRetries, custom-resource-handler.ts). Every other error fails the request at once.
//
// Documentation relied on:
// - STS AssumeRole answers 403 AccessDenied when the role's trust does not (yet) admit the caller:
//   https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html
// - SSM GetParameter answers 400 AccessDeniedException when the caller's policy does not (yet) allow
//   it, ParameterNotFound when the parameter is missing:
//   https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import {
  accessDeniedDeadline,
  answerCloudFormation,
  CustomResourceEvent,
  CustomResourceResponse,
  describeError,
  HandlerContext,
  RetryOptions,
  withinBudget,
  withRetries,
} from './custom-resource-handler';
import { LookupProperties, lookupPhysicalId, SERVICE_NAME_ATTRIBUTE } from './endpoint-lookup-properties';

export type { LookupProperties } from './endpoint-lookup-properties';
export { lookupPhysicalId, SERVICE_NAME_ATTRIBUTE } from './endpoint-lookup-properties';

export type LookupEvent = CustomResourceEvent<LookupProperties>;

export type LookupResponse = CustomResourceResponse<{ readonly [SERVICE_NAME_ATTRIBUTE]: string }>;

/** How the handler reaches AWS: STS in its own region, SSM in the cell's region as the reader role. */
export interface LookupClients {
  readonly sts: STSClient;
  ssm(region: string, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string }): SSMClient;
}

const REQUIRED = ['CellId', 'RoleArn', 'Region', 'ParameterName'] as const;

/**
 * Create and Update: assume the reader role, read the parameter, answer its value as `Parameter.Value`
 * under the physical id `<cell>:<parameter>[:<fingerprint>]`. Delete: nothing (the parameter is the
 * cell's). Never throws: every outcome becomes the response for CloudFormation.
 */
export async function lookupResponse(
  event: LookupEvent,
  context: HandlerContext,
  clients: LookupClients,
  options: RetryOptions = {},
): Promise<LookupResponse> {
  const properties = event.ResourceProperties ?? {};
  const complete = REQUIRED.every((name) => typeof properties[name] === 'string' && properties[name] !== '');
  const physicalId =
    event.RequestType === 'Delete' || !complete
      ? (event.PhysicalResourceId ?? event.LogicalResourceId)
      : lookupPhysicalId(properties as LookupProperties);
  const base = { PhysicalResourceId: physicalId, StackId: event.StackId, RequestId: event.RequestId, LogicalResourceId: event.LogicalResourceId };
  if (event.RequestType === 'Delete') return { ...base, Status: 'SUCCESS' };
  if (!complete) {
    const missing = REQUIRED.filter((name) => typeof properties[name] !== 'string' || properties[name] === '');
    return {
      ...base,
      Status: 'FAILED',
      Reason: `Custom::CellEndpointServiceName ${event.LogicalResourceId}: missing properties ${missing.join(', ')} (CellLink in lib/constructs/router/cell-links.ts sets them)`,
    };
  }
  const { CellId, RoleArn, Region, ParameterName } = properties as LookupProperties;
  return withinBudget(context, options, async (signal, budget): Promise<LookupResponse> => {
    const deniedUntil = accessDeniedDeadline(options);
    let step = `assuming ${RoleArn}`;
    try {
      const assumed = await withRetries(
        () =>
          clients.sts.send(
            new AssumeRoleCommand({
              RoleArn,
              RoleSessionName: `endpoint-lookup-${CellId}`.slice(0, 64),
              DurationSeconds: 900,
            }),
            { abortSignal: signal },
          ),
        deniedUntil,
        signal,
        options,
      );
      const c = assumed.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken) throw new Error('STS answered without credentials');
      step = `reading ${ParameterName} in ${Region} as ${RoleArn}`;
      const ssm = clients.ssm(Region, { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken });
      try {
        const read = await withRetries(
          () => ssm.send(new GetParameterCommand({ Name: ParameterName }), { abortSignal: signal }),
          deniedUntil,
          signal,
          options,
        );
        const value = read.Parameter?.Value;
        if (!value) throw new Error('the parameter has no value');
        log({ requestType: event.RequestType, cell: CellId, parameter: ParameterName, serviceName: value });
        return { ...base, Status: 'SUCCESS', Data: { [SERVICE_NAME_ATTRIBUTE]: value } };
      } finally {
        ssm.destroy();
      }
    } catch (err) {
      const what = describeError(err, signal, budget, step.startsWith('assuming') ? 'STS' : 'SSM');
      log({ requestType: event.RequestType, cell: CellId, parameter: ParameterName, error: `${step}: ${what}` });
      return {
        ...base,
        Status: 'FAILED',
        Reason: `Cell ${CellId}: ${step} failed: ${what}. The cell stack must be deployed first: its role ${RoleArn} trusts this account's <app>-router-* roles and may read ${ParameterName} (CellEndpointRecord, lib/constructs/shared/endpoint-record.ts).`,
      };
    }
  });
}

function log(fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ endpointLookup: fields }));
}

let sts: STSClient | undefined;

/** The Lambda entry point (`index.handler` in the bundle). */
export async function handler(event: LookupEvent, context: HandlerContext): Promise<void> {
  // lookupResponse turns every AWS outcome into a response; a malformed event is answered FAILED.
  await answerCloudFormation(event, 'Custom::CellEndpointServiceName', event.PhysicalResourceId ?? event.LogicalResourceId, () => {
    sts ??= new STSClient({});
    return lookupResponse(event, context, { sts, ssm: (region, credentials) => new SSMClient({ region, credentials }) });
  });
}
