import { FullReadinessGate, GroupTarget, mayLeaveWhenFull, RuntimeApi } from '../../../lib/runtime/router';

const targets = (...states: string[]): GroupTarget[] => states.map((state, i) => ({ id: `10.0.0.${i + 1}`, state }));

describe('a full task leaves its target group only while half of the group stays in', () => {
  it('lets the first of two tasks leave, not the second, and keeps the first out while the second stays healthy', () => {
    expect(mayLeaveWhenFull(targets('healthy', 'healthy'), '10.0.0.1').mayLeave).toBe(true);
    expect(mayLeaveWhenFull(targets('healthy', 'healthy'), '10.0.0.2')).toEqual({
      mayLeave: false,
      reason: 'the 1 that may leave come first in address order (2 of 2 healthy, 1 must stay)',
    });
    expect(mayLeaveWhenFull(targets('unhealthy', 'healthy'), '10.0.0.1').mayLeave).toBe(true);
    expect(mayLeaveWhenFull(targets('unhealthy', 'healthy'), '10.0.0.2')).toEqual({
      mayLeave: false,
      reason: '1 of 2 targets healthy; 1 must stay in',
    });
    // The one out comes back once the other is out too (for whatever reason).
    expect(mayLeaveWhenFull(targets('unhealthy', 'unhealthy'), '10.0.0.1').mayLeave).toBe(false);
  });

  /**
   * Every task full at once, each deciding on its own view of the group, as late as the last three
   * rounds (its own poll, and the NLB's two failed checks before it marks a target): the places go to
   * the same tasks in every view, so however the views mix, no more than half of the group is out.
   */
  it('never lets more than half of a group out, whatever mix of stale views the tasks decide on', () => {
    for (const size of [1, 2, 3, 4, 5, 8, 9, 16]) {
      const out = new Set<number>();
      const views = [Array.from({ length: size }, () => 'healthy')];
      for (let round = 0; round < size + 3; round++) {
        for (let i = 0; i < size; i++) {
          const view = views[Math.max(0, views.length - 1 - ((i + round) % 3))];
          if (mayLeaveWhenFull(targets(...view), `10.0.0.${i + 1}`).mayLeave) out.add(i);
          else out.delete(i);
        }
        if (out.size > Math.floor(size / 2)) throw new Error(`a group of ${size}: ${out.size} tasks out in round ${round}`);
        views.push(Array.from({ length: size }, (_, i) => (out.has(i) ? 'unhealthy' : 'healthy')));
      }
      // Settled: exactly half (rounded down) out.
      expect([size, out.size]).toEqual([size, Math.floor(size / 2)]);
    }
  });

  it('does not count draining or unused targets, and keeps a task in that is not among the targets', () => {
    // Two draining (a deployment's old tasks) do not make room: of the two serving, one may leave.
    expect(mayLeaveWhenFull(targets('healthy', 'healthy', 'draining', 'draining'), '10.0.0.1').mayLeave).toBe(true);
    expect(mayLeaveWhenFull(targets('unhealthy', 'healthy', 'draining', 'unused'), '10.0.0.2').mayLeave).toBe(false);
    // Initial (registering) targets are not yet healthy: they do not count as staying in.
    expect(mayLeaveWhenFull(targets('healthy', 'initial', 'initial'), '10.0.0.1').mayLeave).toBe(false);
    expect(mayLeaveWhenFull(targets('healthy', 'healthy'), '10.0.0.9').reason).toBe("this task (10.0.0.9) is not among its target group's 2 targets");
    expect(mayLeaveWhenFull(targets('healthy', 'healthy'), undefined).mayLeave).toBe(false);
  });
});

describe('FullReadinessGate', () => {
  /** A runtime API that records what it was sent, with the router frontend at `connections`. */
  function fakeApi(connections: { scur: number }) {
    const sent: string[] = [];
    const api = {
      expectOk: async (command: string) => {
        sent.push(command);
      },
      stats: async () => [{ pxname: 'router', svname: 'FRONTEND', scur: String(connections.scur) }],
    };
    return { api: api as unknown as RuntimeApi, sent };
  }
  const NOW = 1_800_000_000_000;

  it('asks nobody below 80% of its limit; past it, writes until when it may leave, and logs only when the answer changes', async () => {
    const connections = { scur: 10 };
    const { api, sent } = fakeApi(connections);
    const logs: string[] = [];
    let asked = 0;
    let states = ['healthy', 'healthy'];
    const gate = new FullReadinessGate({
      api,
      stateDir: '/state',
      connectionLimit: 100,
      targets: async () => (asked++, targets(...states)),
      self: async () => '10.0.0.1',
      holdMs: 180_000,
      emit: (l) => logs.push(l),
      now: () => NOW,
    });
    expect(await gate.tick()).toBe(false);
    expect(asked).toBe(0);
    connections.scur = 85;
    expect(await gate.tick()).toBe(true);
    expect(await gate.tick()).toBe(true);
    states = ['healthy', 'unhealthy'];
    expect(await gate.tick()).toBe(false);
    expect(asked).toBe(3);
    const until = (NOW + 180_000) / 1000;
    expect(sent).toEqual([
      'set map /state/readiness.map full-may-leave 0',
      `set map /state/readiness.map full-may-leave ${until}`,
      `set map /state/readiness.map full-may-leave ${until}`,
      'set map /state/readiness.map full-may-leave 0',
    ]);
    expect(logs.map((l) => JSON.parse(l).reason)).toEqual([
      'not full (10 of 100 connections)',
      '1 of the 1 that may leave (2 of 2 healthy, 1 must stay)',
      '1 of 2 targets healthy; 1 must stay in',
    ]);
  });

  it('keeps the task in when the load balancer cannot be asked, and says so', async () => {
    const { api, sent } = fakeApi({ scur: 95 });
    const logs: string[] = [];
    const gate = new FullReadinessGate({
      api,
      stateDir: '/state',
      connectionLimit: 100,
      targets: () => Promise.reject(new Error('Rate exceeded')),
      self: async () => '10.0.0.1',
      holdMs: 180_000,
      emit: (l) => logs.push(l),
    });
    expect(await gate.tick()).toBe(false);
    expect(gate.failed).toBe(true);
    expect(sent).toEqual(['set map /state/readiness.map full-may-leave 0']);
    expect(JSON.parse(logs[0])).toEqual({ level: 'info', event: 'full-readiness', mayLeave: false, reason: 'target health unknown: Rate exceeded' });
  });
});
