import { DescribeTargetHealthCommand, ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { GroupTarget } from './full-readiness';

/**
 * The targets of a router group's target group and their health (ELBv2 `DescribeTargetHealth`,
 * which has no resource-level permissions: the task role is granted it on `*`). One call: a
 * target group holds far fewer targets than the API returns at once.
 */
export function targetGroupTargets(client: ElasticLoadBalancingV2Client, targetGroupArn: string): () => Promise<readonly GroupTarget[]> {
  return async () => {
    const answer = await client.send(new DescribeTargetHealthCommand({ TargetGroupArn: targetGroupArn }));
    return (answer.TargetHealthDescriptions ?? [])
      .filter((d) => d.Target?.Id !== undefined)
      .map((d) => ({ id: d.Target!.Id!, state: d.TargetHealth?.State ?? 'unavailable' }));
  };
}
