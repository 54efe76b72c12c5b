import { wholeLines } from '../../../lib/runtime/router';

// HAProxy's log lines reach `router local` through a pipe whose reads can end mid-line under load;
// a JSON log line cut in two must not come out as two broken lines.
test('log lines split across pipe reads come out whole, once, in order', () => {
  const whole = wholeLines();
  const line = (n: number) => `{"time":"t${n}","status":500}`;
  const text = Array.from({ length: 50 }, (_, i) => `${line(i)}\n`).join('');
  const out: string[] = [];
  // Every chunk size from 1 byte up, so a cut falls at every position of a line.
  for (let size = 1, at = 0; at < text.length; at += size, size = (size % 37) + 1) out.push(...whole(text.slice(at, at + size)));
  expect(out).toEqual(Array.from({ length: 50 }, (_, i) => line(i)));
  expect(out.every((l) => JSON.parse(l).status === 500)).toBe(true);
});

test('an unfinished last line waits for its end', () => {
  const whole = wholeLines();
  expect(whole('{"a":1}\n{"b"')).toEqual(['{"a":1}']);
  expect(whole(':2')).toEqual([]);
  expect(whole('}\n')).toEqual(['{"b":2}']);
});
