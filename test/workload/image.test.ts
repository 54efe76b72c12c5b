import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.join(__dirname, '..', '..');

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(): string[] {
  const text = fs.readFileSync(path.join(ROOT, 'images', 'workload', 'Dockerfile'), 'utf8');
  return text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

describe('the workload image', () => {
  const lines = instructions();

  it('runs bin/workload.ts as a non-root user, with production dependencies only', () => {
    expect(lines[0]).toMatch(/^FROM public\.ecr\.aws\/docker\/library\/node:\d+/);
    expect(lines).toContain('RUN npm ci --omit=dev');
    expect(lines.filter((l) => l.startsWith('USER'))).toEqual(['USER node']);
    expect(lines[lines.length - 1]).toBe('CMD ["node", "--require", "tsx/cjs", "bin/workload.ts"]');
    expect(fs.existsSync(path.join(ROOT, 'bin', 'workload.ts'))).toBe(true);
  });

  it('trusts the RDS CA bundle (TLS to the database is verified) and never turns the fault hooks on', () => {
    expect(lines.some((l) => l.startsWith('ADD https://truststore.pki.rds.amazonaws.com/'))).toBe(true);
    expect(lines.some((l) => /^ENV NODE_EXTRA_CA_CERTS=/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain('WORKLOAD_TEST_FAULTS');
  });

  it('checks the same health path the load balancer does by default', () => {
    const env = lines.filter((l) => l.startsWith('ENV')).join(' ');
    expect(env).toContain('HEALTH_CHECK_PATH=/healthz');
    expect(env).toContain('PORT=8080');
  });
});
