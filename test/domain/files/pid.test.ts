import { spawnSync } from 'child_process';
import { pidRunning } from '../../../lib/domain/files';

describe('pidRunning', () => {
  it('is true for a running process and false for one that has exited', () => {
    expect(pidRunning(process.pid)).toBe(true);
    const exited = spawnSync('/bin/true');
    expect(exited.pid).toBeGreaterThan(0);
    expect(pidRunning(exited.pid)).toBe(false);
  });

  it('is false for what is not a pid (a missing, zero, negative or fractional value from a file)', () => {
    for (const pid of [undefined, 0, -1, 1.5, Number.NaN]) expect(pidRunning(pid)).toBe(false);
  });
});
