import { createHash, X509Certificate } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { RDS_CA_BUNDLE } from '../../../lib/runtime/images';
import { exampleFleet, REPO_ROOT } from '../../support/fleet';

/** The RDS CA bundle the workload and mover images trust: the file its README describes, current for the fleet's regions. */
describe('the vendored RDS CA bundle', () => {
  const pem = fs.readFileSync(path.join(REPO_ROOT, RDS_CA_BUNDLE), 'utf8');
  const certs = pem.split(/(?=-----BEGIN CERTIFICATE-----)/).filter((c) => c.trim()).map((c) => new X509Certificate(c));

  it('is the file images/certs/README.md records (its sha256)', () => {
    const readme = fs.readFileSync(path.join(path.dirname(path.join(REPO_ROOT, RDS_CA_BUNDLE)), 'README.md'), 'utf8');
    const recorded = /sha256 of this file: `([0-9a-f]{64})`/.exec(readme)![1];
    expect(createHash('sha256').update(pem).digest('hex')).toBe(recorded);
  });

  it('holds only Amazon RDS certificate authorities', () => {
    expect(certs.length).toBeGreaterThan(50);
    for (const c of certs) {
      expect(c.ca).toBe(true);
      expect(c.subject).toMatch(/Amazon/);
    }
  });

  it('has a root valid for another year in every region of the example fleet', () => {
    const soon = Date.now() + 365 * 24 * 3600 * 1000;
    for (const region of Object.keys(exampleFleet().regions)) {
      const roots = certs.filter((c) => c.subject.includes(`CN=Amazon RDS ${region} Root CA`) && c.issuer === c.subject && Date.parse(c.validTo) > soon);
      expect([region, roots.length > 0]).toEqual([region, true]);
    }
  });
});
