import * as fs from 'fs';
import * as path from 'path';
import { imageContext } from '../../../lib/runtime/images';

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(context: string): string[] {
  const text = fs.readFileSync(path.join(context, 'Dockerfile'), 'utf8');
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

describe('the workload image', () => {
  const context = imageContext('workload');
  const lines = instructions(context);

  it('runs the bundle of bin/workload.ts as a non-root user on the current Node.js LTS, without npm', () => {
    expect(lines[0]).toMatch(/^FROM public\.ecr\.aws\/docker\/library\/node:24-bookworm-slim$/);
    expect(lines.filter((l) => /\bnpm (ci|install)\b/.test(l))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('USER'))).toEqual(['USER node']);
    expect(lines).toContain('COPY workload.js /app/workload.js');
    expect(lines[lines.length - 1]).toBe('CMD ["node", "/app/workload.js"]');
    expect(fs.existsSync(path.join(context, 'workload.js'))).toBe(true);
  });

  it('trusts the RDS CA bundle from its own context (TLS to the database is verified) and never turns the fault hooks on', () => {
    expect(lines).toContain('COPY rds-ca-bundle.pem /etc/ssl/rds-ca-bundle.pem');
    expect(fs.readFileSync(path.join(context, 'rds-ca-bundle.pem'), 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(lines.some((l) => /^ENV NODE_EXTRA_CA_CERTS=\/etc\/ssl\/rds-ca-bundle\.pem\b/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain('WORKLOAD_TEST_FAULTS');
  });

  it('checks the same health path the load balancer does by default', () => {
    const env = lines.filter((l) => l.startsWith('ENV')).join(' ');
    expect(env).toContain('HEALTH_CHECK_PATH=/healthz');
    expect(env).toContain('PORT=8080');
  });
});
