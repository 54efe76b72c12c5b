import { cellEndpoint, cellZoneName, resolveFleet, SEED_CREATED_AT, seedMapping } from '../../../lib/domain/fleet';
import { validateMapping } from '../../../lib/domain/mapping';
import { exampleFleet, validInput } from '../../support/fleet';

describe('cell endpoints from the fleet', () => {
  const fleet = exampleFleet();

  it("names each cell in the routers' private zone, https only for a cell with a certificate", () => {
    expect(cellEndpoint(fleet, 'eu-1')).toBe('http://eu-1.orders.cells.internal');
    const withCert = {
      ...fleet,
      cells: fleet.cells.map((c) => (c.id === 'eu-1' ? { ...c, certificateArn: 'arn:aws:acm:eu-west-1:333333333331:certificate/x' } : c)),
    };
    expect(cellEndpoint(withCert, 'eu-1')).toBe('https://eu-1.orders.cells.internal');
    expect(cellZoneName(fleet)).toBe('orders.cells.internal');
    expect(() => cellEndpoint(fleet, 'eu-9')).toThrow(/cell `eu-9` is not in the fleet/);
  });

  it('creates no zone when the template points at names of your own', () => {
    const own = resolveFleet({ ...validInput(), router: { ...validInput().router, cellEndpointTemplate: 'https://cells.example.com/{cell}' } });
    expect(cellZoneName(own)).toBeUndefined();
    expect(cellEndpoint(own, 'eu-1')).toBe('https://cells.example.com/eu-1');
    const domain = resolveFleet({ ...validInput(), router: { ...validInput().router, cellEndpointTemplate: 'https://{cell}.cells.example.com' } });
    expect(cellZoneName(domain)).toBe('cells.example.com');
  });

  it('seeds a valid, stable version 1 over the active regular cells', () => {
    const doc = seedMapping(fleet);
    expect(validateMapping(doc)).toEqual([]);
    expect(doc).toMatchObject({ version: 1, createdAt: SEED_CREATED_AT });
    expect(seedMapping(fleet)).toEqual(doc);
    expect(Object.keys(doc.cells)).toEqual(fleet.cells.map((c) => c.id));
  });
});
