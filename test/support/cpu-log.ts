import * as fs from 'fs';
import * as path from 'path';

/**
 * With `TEST_CPU_LOG=FILE` (jest.config.js), each test file appends one line to FILE: the CPU
 * seconds (user + sys) its jest worker spent on it (loading its modules and running its tests),
 * those of the child processes it ran and waited for, its wall seconds, and its path, tab-separated.
 * On a loaded machine the CPU figures compare files where wall times cannot (docs/testing.md).
 */
const LOG = process.env.TEST_CPU_LOG!;
/** CPU seconds of this process's waited-for children: /proc/self/stat's cutime and cstime, in clock ticks (100 a second on Linux). */
const children = () => {
  const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
};
const cpu = process.cpuUsage();
const childCpu = children();
const started = Date.now();

afterAll(() => {
  const own = process.cpuUsage(cpu);
  const file = path.relative(path.join(__dirname, '..', '..'), expect.getState().testPath ?? '');
  fs.appendFileSync(
    LOG,
    `${((own.user + own.system) / 1e6).toFixed(2)}\t${(children() - childCpu).toFixed(2)}\t${((Date.now() - started) / 1000).toFixed(1)}\t${file}\n`,
  );
});
