/**
 * The layers of lib/ and what each may import (docs/design.md, "Code layout", is this file's table).
 * Type-only imports count too (tsPreCompilationDeps): a layer that names another's types depends on it.
 * Run: `npm run lint:layers` (CI runs it); test/layers.test.ts shows it refusing a back import.
 */
const CDK = '^node_modules/(aws-cdk-lib|constructs|cdk-nag|@cdklabs)/';
const SDK = '^node_modules/@aws-sdk/';

/** `layer` may import only `allowed` (and itself) of lib/. */
const layer = (name, allowed, comment) => ({
  name: `layer-${name}`,
  comment,
  severity: 'error',
  from: { path: `^lib/${name}/` },
  to: { path: '^lib/', pathNot: [`^lib/${name}/`, ...allowed.map((a) => `^lib/${a}/`)] },
});

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'No import circle, type imports included.', from: {}, to: { circular: true } },
    layer('domain', [], 'The domain (fleet model, mapping, waves, capacity, limits, names, files, what a move is) imports only the domain.'),
    layer('adapters', ['domain'], 'Adapters to AWS and stores import the domain (and the AWS SDK).'),
    layer('runtime', ['domain', 'adapters'], 'What ships in images and functions: the router agent, the workload, the handlers, the image recipes.'),
    layer('operations', ['domain', 'adapters', 'runtime'], "What runs on an operator's machine: the move engine, the local fleet."),
    layer(
      'constructs',
      ['domain', 'adapters', 'runtime'],
      "The CDK constructs: they render the runtime's configuration and bundle it; nothing operational.",
    ),
    layer(
      'app',
      ['domain', 'adapters', 'runtime', 'operations', 'constructs'],
      'The one adapter from the fleet file to the constructs, and the audit.',
    ),
    layer('cli', ['domain', 'adapters', 'runtime', 'operations'], 'cellctl loads without CDK: no constructs, no app.'),
    {
      name: 'cdk-only-in-constructs-and-app',
      severity: 'error',
      comment: 'aws-cdk-lib, constructs and cdk-nag are loaded by the constructs, the app and the package entry point only.',
      from: { path: '^lib/(domain|adapters|runtime|operations|cli)/' },
      to: { path: CDK },
    },
    { name: 'no-sdk-in-domain', severity: 'error', comment: 'The domain calls no AWS API.', from: { path: '^lib/domain/' }, to: { path: SDK } },
  ],
  options: {
    includeOnly: '^(lib|node_modules/(aws-cdk-lib|constructs|cdk-nag|@cdklabs|@aws-sdk))/',
    exclude: { path: '\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    moduleSystems: ['cjs', 'es6'],
    // test/layers.test.ts cruises a copy of lib/ whose node_modules is a link to this one's.
    preserveSymlinks: true,
  },
};
