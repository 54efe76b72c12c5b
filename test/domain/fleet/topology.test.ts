/**
 * `cellctl fleet topology`: the fleet drawn from the fleet file (lib/domain/fleet/topology.ts),
 * looked at in headless chromium: every account, region, zone, router and cell is on it, each
 * router reaches every region's cells, and no text runs out of its box.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { topologySvg } from '../../../lib/domain/fleet';
import { countColour, evaluateInPage, screenshot } from '../../support/browser';
import { cellctl } from '../../support/cli';
import { exampleFleet, REPO_ROOT } from '../../support/fleet';

const fleet = exampleFleet();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'topology-'));
const page = path.join(dir, 'topology.html');

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('writes the page from the fleet file', async () => {
  const r = await cellctl('fleet', 'topology', '--config', path.join(REPO_ROOT, 'cells.config.ts'), '--out', page);
  expect(r).toMatchObject({ code: 0, out: `wrote ${page}: 8 cells in 2 regions\n` });
  const html = fs.readFileSync(page, 'utf8');
  expect(html).not.toMatch(/<script|<link|src=|url\(http/);
  for (const c of fleet.cells) {
    expect(html).toContain(`>${c.id}${c.canary ? ' · canary' : ''}</text>`);
    expect(html).toContain(`account ${c.account}`);
  }
  for (const [region, r] of Object.entries(fleet.regions)) {
    expect(html).toContain(`router ${region}`);
    expect(html).toContain(`zones ${r.availabilityZones.join(' · ')}`);
  }
  expect(html).toContain(`tooling account ${fleet.accounts.tooling}`);
  expect(html).toContain(`router account ${fleet.accounts.router}`);
  // Every router region reaches every region's cells: two regions, four paths, two of them cross-region.
  expect(html.match(/marker-end=/g)).toHaveLength(4);
  expect(html.match(/over cross-region PrivateLink<\/title>/g)).toHaveLength(2);
});

it('looks right: the routers, the cells and the canary drawn, and no text out of its box', () => {
  const picture = screenshot(page, path.join(dir, 'topology.png'), 820, 760);
  // Two router boxes (#fff8c5), seven regular cells (#e8f1fd), the canary (#e9f7ec).
  expect(countColour(picture, '#fff8c5')).toBeGreaterThan(2 * 20_000);
  expect(countColour(picture, '#e8f1fd')).toBeGreaterThan(7 * 10_000);
  expect(countColour(picture, '#e9f7ec')).toBeGreaterThan(10_000);
  const overflowing = evaluateInPage<string[]>(
    page,
    `(() => {
      const svg = document.querySelector('svg');
      const rects = [...svg.querySelectorAll('rect')].map((r) => r.getBBox());
      return [...svg.querySelectorAll('text')].filter((t) => {
        const b = t.getBBox();
        const owner = rects.filter((r) => b.x >= r.x && b.y >= r.y && b.x <= r.x + r.width && b.y <= r.y + r.height).sort((p, q) => p.width * p.height - q.width * q.height)[0];
        return owner ? b.x + b.width > owner.x + owner.width : b.x + b.width > svg.viewBox.baseVal.width;
      }).map((t) => t.textContent);
    })()`,
    820,
    760,
  );
  expect(overflowing).toEqual([]);
});

it('draws a cell that is not active, and a fleet of four regions, each region reaching all', () => {
  const drained = { ...fleet, cells: fleet.cells.map((c) => (c.id === 'eu-2' ? { ...c, state: 'draining' as const } : c)) };
  expect(topologySvg(drained)).toContain('>eu-2 · draining</text>');
  const regions = { ...fleet.regions, 'us-west-2': fleet.regions['us-east-1'], 'ap-northeast-1': fleet.regions['us-east-1'] };
  const cells = [
    ...fleet.cells,
    { ...fleet.cells[4], id: 'usw-1', region: 'us-west-2' },
    { ...fleet.cells[4], id: 'apne-1', region: 'ap-northeast-1' },
  ];
  expect(topologySvg({ ...fleet, regions, cells }).match(/marker-end=/g)).toHaveLength(16);
});

it("with router.reach home-and-failover, draws only the links a region's routers have: its own cells and those it is the failover of", () => {
  const regions = { ...fleet.regions, 'us-west-2': fleet.regions['us-east-1'], 'ap-northeast-1': fleet.regions['us-east-1'] };
  const cells = [
    ...fleet.cells.map((c) => ({ ...c, failoverRegion: c.region === 'eu-west-1' ? 'us-east-1' : 'eu-west-1' })),
    { ...fleet.cells[4], id: 'usw-1', region: 'us-west-2', failoverRegion: 'us-east-1' },
    { ...fleet.cells[4], id: 'usw-2', region: 'us-west-2', failoverRegion: 'eu-west-1' },
    { ...fleet.cells[4], id: 'apne-1', region: 'ap-northeast-1', failoverRegion: 'us-west-2' },
  ];
  const router = {
    ...fleet.router,
    reach: 'home-and-failover' as const,
    regionUrls: Object.fromEntries(Object.keys(regions).map((r) => [r, `https://${r}.example.com`])),
  };
  const svg = topologySvg({ ...fleet, regions, cells, router });
  // eu-west-1: its own, us-east-1's (their failover), usw-2; us-east-1: its own, eu-west-1's, usw-1;
  // us-west-2: its own, apne-1; ap-northeast-1: its own only.
  expect(svg.match(/marker-end=/g)).toHaveLength(9);
  expect(svg).toContain('router us-east-1 reaches 1 of the 2 cells of us-west-2 over cross-region PrivateLink');
  expect(svg).toContain('router us-west-2 reaches the 1 cells of ap-northeast-1 over cross-region PrivateLink');
  expect(svg).not.toMatch(/router ap-northeast-1 reaches [^<]* over cross-region/);
  expect(svg).toContain("each reaching its region's cells and those it is the failover of (router.reach)");
});
