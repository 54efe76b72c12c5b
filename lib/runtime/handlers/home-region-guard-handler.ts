// The Lambda handler behind `Custom::RouterHomeRegionGuard` (HomeRegionGuard, home-region-guard.ts):
// refuses a router deploy that changes `router.homeRegion`. Every router stack keeps the home region
// it was deployed with in an SSM parameter of its own region, which depends on this guard, so the
// guard reads the value before the deploy writes the new one. A different value fails the update:
// CloudFormation rolls the stack back before anything moves (the publisher and move operator roles,
// the move bucket are deleted only in a successful update's cleanup).
//
// Bundled at synth (esbuild, NodejsFunction) with this project's `@aws-sdk/client-ssm`.
//
// Documentation relied on:
// - SSM GetParameter answers ParameterNotFound for a parameter that does not exist (a first deploy,
//   or a stack from before this guard), AccessDeniedException while a new role's policy propagates:
//   https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
// - A custom resource is updated (the handler runs again) only when its properties change; the
//   guard's include the home region, so a change of `router.homeRegion` always runs it:
//   https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requesttypes-update.html
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
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

/** What the custom resource passes. */
export interface GuardProperties {
  /** The parameter that holds the home region this stack was last deployed with. */
  readonly ParameterName: string;
  /** `router.homeRegion` of the deploy in progress. */
  readonly HomeRegion: string;
}

export type GuardEvent = CustomResourceEvent<GuardProperties>;
export type GuardResponse = CustomResourceResponse<{ readonly Previous: string }>;

const REQUIRED = ['ParameterName', 'HomeRegion'] as const;

/**
 * The refusal CloudFormation shows: the home region the fleet was deployed with, the one asked for,
 * what would move, and the fix.
 */
export function homeRegionChangeReason(previous: string, asked: string): string {
  return `router.homeRegion is ${asked} in this deploy, but the fleet's routers were deployed with router.homeRegion ${previous}: the publisher and move operator roles and the move bucket (with any move in flight) live there, and changing it would delete them there and create them anew in ${asked}. Set router.homeRegion back to ${previous} in cells.config.ts (docs/router.md, "The home region").`;
}

/**
 * Create and Update: read the parameter; absent (a first deploy) or equal to `HomeRegion` succeeds,
 * anything else fails with `homeRegionChangeReason`. Delete: nothing. Never throws: every outcome
 * becomes the response for CloudFormation.
 */
export async function guardResponse(event: GuardEvent, context: HandlerContext, ssm: SSMClient, options: RetryOptions = {}): Promise<GuardResponse> {
  const properties = event.ResourceProperties ?? {};
  const base = {
    PhysicalResourceId: event.PhysicalResourceId ?? `${properties.ParameterName ?? event.LogicalResourceId}:guard`,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  };
  if (event.RequestType === 'Delete') return { ...base, Status: 'SUCCESS' };
  const missing = REQUIRED.filter((name) => typeof properties[name] !== 'string' || properties[name] === '');
  if (missing.length > 0)
    return {
      ...base,
      Status: 'FAILED',
      Reason: `Custom::RouterHomeRegionGuard ${event.LogicalResourceId}: missing properties ${missing.join(', ')} (HomeRegionGuard in lib/constructs/router/home-region-guard.ts sets them)`,
    };
  const { ParameterName, HomeRegion } = properties as GuardProperties;
  return withinBudget(context, options, async (signal, budget): Promise<GuardResponse> => {
    let previous: string | undefined;
    try {
      const read = await withRetries(
        () => ssm.send(new GetParameterCommand({ Name: ParameterName }), { abortSignal: signal }),
        accessDeniedDeadline(options),
        signal,
        options,
      );
      previous = read.Parameter?.Value;
    } catch (err) {
      if ((err as Error).name !== 'ParameterNotFound') {
        const what = describeError(err, signal, budget, 'SSM');
        log({ requestType: event.RequestType, parameter: ParameterName, error: what });
        return {
          ...base,
          Status: 'FAILED',
          Reason: `Reading ${ParameterName} failed: ${what}. The stack's custom resource role must be allowed ssm:GetParameter on it (HomeRegionGuard, home-region-guard.ts).`,
        };
      }
    }
    log({ requestType: event.RequestType, parameter: ParameterName, previous: previous ?? null, asked: HomeRegion });
    if (previous !== undefined && previous !== HomeRegion) return { ...base, Status: 'FAILED', Reason: homeRegionChangeReason(previous, HomeRegion) };
    return { ...base, Status: 'SUCCESS', Data: { Previous: previous ?? '' } };
  });
}

function log(fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ homeRegionGuard: fields }));
}

let client: SSMClient | undefined;

/** The Lambda entry point (`index.handler` in the bundle). */
export async function handler(event: GuardEvent, context: HandlerContext): Promise<void> {
  await answerCloudFormation(event, 'Custom::RouterHomeRegionGuard', event.PhysicalResourceId ?? event.LogicalResourceId, () => {
    client ??= new SSMClient({});
    return guardResponse(event, context, client);
  });
}
