import { CreateTargetGroupCommand, ElasticLoadBalancingV2Client, RegisterTargetsCommand } from '@aws-sdk/client-elastic-load-balancing-v2';
import { mayLeaveWhenFull, targetGroupTargets } from '../../../lib/runtime/router';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

/**
 * A router task's view of its target group (`targetGroupTargets`, ELBv2 DescribeTargetHealth), read
 * from moto's ELBv2: the targets by IP, with the states the full-task gate counts.
 */
describe('target health against moto (ELBv2 emulator)', () => {
  let moto: Moto;
  let elb: ElasticLoadBalancingV2Client;
  beforeAll(async () => {
    moto = await startMoto();
    elb = new ElasticLoadBalancingV2Client(motoClientConfig(moto, 'eu-west-1'));
  });
  afterAll(async () => {
    elb?.destroy();
    await moto?.stop();
  });

  it("lists a router group's targets by address with their states", async () => {
    // moto's default VPC of the region (EC2's query API; no EC2 client in this project).
    const vpcs = await (
      await fetch(`${moto.endpoint}/?Action=DescribeVpcs&Version=2016-11-15`, {
        headers: { authorization: 'AWS4-HMAC-SHA256 Credential=testing/20261203/eu-west-1/ec2/aws4_request' },
      })
    ).text();
    const vpcId = /<vpcId>([^<]+)/.exec(vpcs)![1];
    const group = await elb.send(
      new CreateTargetGroupCommand({
        Name: 'orders-router-main',
        Protocol: 'TCP',
        Port: 8080,
        VpcId: vpcId,
        TargetType: 'ip',
        HealthCheckPort: '8081',
      }),
    );
    const arn = group.TargetGroups![0].TargetGroupArn!;
    await elb.send(
      new RegisterTargetsCommand({
        TargetGroupArn: arn,
        Targets: [
          { Id: '10.0.1.10', Port: 8080 },
          { Id: '10.0.2.10', Port: 8080 },
        ],
      }),
    );
    const targets = await targetGroupTargets(elb, arn)();
    expect(targets.map((t) => t.id).sort()).toEqual(['10.0.1.10', '10.0.2.10']);
    // moto reports registered targets healthy (it runs no health checks).
    expect(targets).toEqual(
      expect.arrayContaining([
        { id: '10.0.1.10', state: 'healthy' },
        { id: '10.0.2.10', state: 'healthy' },
      ]),
    );
    // What the gate makes of it: one of the two may leave when full; a task not registered there stays in.
    expect(mayLeaveWhenFull(targets, '10.0.1.10').mayLeave).toBe(true);
    expect(mayLeaveWhenFull(targets, '10.0.3.10').mayLeave).toBe(false);
  });
});
