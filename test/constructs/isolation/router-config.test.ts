import { renderHaproxyConfig } from '../../../lib/runtime/router/haproxy-config';
import { routerConfigProblems, routerImageConfig } from '../../../lib/constructs/isolation';
import { exampleFleet } from '../../support/fleet';

describe('routerConfigProblems', () => {
  const config = routerImageConfig(exampleFleet());
  const codes = (text: string) => routerConfigProblems(text).map((p) => p.code);
  /** The generated configuration with `line` added right after the `header` line. */
  const withLine = (header: string, line: string) => config.replace(`${header}\n`, `${header}\n  ${line}\n`);

  it('passes on the configuration the router image is built with, debug headers or not', () => {
    expect(config).toContain('retries 0');
    expect(routerConfigProblems(config)).toEqual([]);
    const debug = renderHaproxyConfig({
      bind: { address: '127.0.0.1', port: 0 },
      adminSocket: '/tmp/s',
      stateDir: '/tmp',
      partitionKey: { source: 'header', name: 'x-tenant-id' },
      bucketCount: 16384,
      slots: 4,
      cellMaxConn: 10,
      healthCheckPath: '/health',
      debugHeaders: true,
      statsPort: 8404,
    });
    expect(routerConfigProblems(debug)).toEqual([]);
  });

  it('fails on retries or redispatch: a request must never reach a second cell', () => {
    expect(codes(config.replace('  retries 0\n', '  retries 3\n'))).toEqual(['retries']);
    expect(codes(config.replace('  retries 0\n', ''))).toEqual(['retries']);
    expect(codes(withLine('defaults', 'option redispatch'))).toEqual(['redispatch']);
    expect(codes(withLine('backend slot0', 'retry-on conn-failure'))).toEqual(['retry-on']);
    expect(routerConfigProblems(withLine('backend slot0', 'retries 2'))[0].message).toMatch(/^line \d+ \(backend slot0\): `retries 2`/);
  });

  it('fails on per-request logic beyond key, hash and lookup', () => {
    expect(codes(withLine('frontend router', 'http-request set-path /v2%[path]'))).toEqual(['request-set-path']);
    expect(codes(withLine('frontend router', 'http-request lua.tenant_rules'))).toEqual(['lua', 'request-lua.tenant_rules']);
    expect(codes(withLine('global', 'lua-load /etc/haproxy/rules.lua'))).toEqual(['lua']);
    expect(codes(withLine('frontend router', 'filter compression'))).toEqual(['filter']);
    expect(codes(withLine('frontend router', 'http-request set-var(txn.b) req.body'))).toEqual(['body']);
    expect(codes(withLine('frontend router', 'http-request set-var(txn.b) req.body_param(tenant)'))).toEqual(['body']);
    expect(codes(withLine('frontend router', 'http-request redirect location /elsewhere'))).toEqual(['request-redirect']);
  });

  it("allows the redirect backends' one 307 to the away map's URL (router.reach), and no other redirect", () => {
    expect(config).toContain('backend away0\n');
    const away = config.match(/ {2}http-request redirect location \S+ code 307\n/)![0];
    expect(codes(config.replace(away, away.replace('code 307', 'code 302')))).toEqual(['request-redirect']);
    expect(codes(withLine('frontend router', 'http-request redirect location https://elsewhere.example.com%[pathq] code 307'))).toEqual([
      'request-redirect',
    ]);
    expect(codes(withLine('backend slot0', away.trim()))).toEqual(['request-redirect']);
  });

  it('fails on a backend that spreads requests over several cells', () => {
    expect(codes(withLine('backend slot0', 'server other 127.0.0.1:2 backup'))).toEqual(['backup', 'servers']);
    expect(codes(withLine('backend slot0', 'server other 127.0.0.1:2'))).toEqual(['servers']);
  });

  it("allows the zonal servers of one cell, the body length check, waiting for the body and the router's own identity headers, nothing more", () => {
    expect(config).toMatch(/server z1 /);
    expect(config).toContain('req.hdr_val(content-length)');
    expect(config).toContain('http-request wait-for-body time');
    expect(codes(withLine('frontend router', 'http-request return status 413 if { req.body_size gt 10 }'))).toEqual([]);
    expect(codes(withLine('frontend router', 'http-request set-header x-forwarded-for %[src]'))).toEqual([]);
    expect(codes(withLine('frontend router', 'http-request del-header x-cell'))).toEqual([]);
    // Added only after the client's copies are removed (the configuration's del-header of x-forwarded-.*).
    expect(config).toMatch(/del-header \S+ -m reg\n\s+http-request add-header x-forwarded-proto /);
    expect(codes(withLine('frontend router', 'http-request add-header x-forwarded-host %[src]'))).toEqual(['request-add-header']);
    expect(routerConfigProblems('defaults\n  retries 0\nfrontend router\n  http-request add-header x-forwarded-proto https\n')).toEqual([
      { code: 'request-add-header', message: expect.stringContaining("no `del-header` before it removing the client's x-forwarded-proto") },
    ]);
    expect(
      routerConfigProblems(
        'defaults\n  retries 0\nfrontend router\n  http-request del-header x-forwarded-proto\n  http-request add-header x-forwarded-proto https\n',
      ),
    ).toEqual([]);
    expect(codes(withLine('frontend router', 'http-request set-header x-cell other'))).toEqual(['request-set-header']);
    expect(codes(withLine('frontend router', 'use_backend %[req.body,map(/x)]'))).toEqual(['body']);
  });
});
