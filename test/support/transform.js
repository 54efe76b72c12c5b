/**
 * jest's transformer for TypeScript: esbuild, type annotations stripped and nothing checked
 * (docs/testing.md). Type errors are `tsc --noEmit`'s (`npm run build`), which `npm run test:unit`
 * runs before jest. tsconfig.json's `isolatedModules` keeps every file transpilable alone, so the
 * result is the code `tsc` would emit: CommonJS, ES2022 class fields.
 */
const crypto = require('crypto');
const fs = require('fs');
const { transformSync, version } = require('esbuild');

const OPTIONS = {
  format: 'cjs',
  target: 'es2022',
  platform: 'node',
  sourcemap: 'external',
  sourcesContent: false,
  tsconfigRaw: { compilerOptions: { useDefineForClassFields: true, alwaysStrict: true } },
  // `import()` becomes `require()`, as tsc's CommonJS output has it: jest runs modules in a VM
  // context that refuses a real dynamic import without --experimental-vm-modules.
  supported: { 'dynamic-import': false },
};
/** What a cached result depends on besides the file: esbuild, these options, this file. */
const SALT = crypto
  .createHash('sha256')
  .update(`${version}\0${JSON.stringify(OPTIONS)}\0${fs.readFileSync(__filename, 'utf8')}`)
  .digest('hex');

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, { ...OPTIONS, loader: filename.endsWith('.tsx') ? 'tsx' : 'ts', sourcefile: filename });
    return { code, map };
  },
  getCacheKey(source, filename) {
    return crypto.createHash('sha256').update(SALT).update('\0').update(filename).update('\0').update(source).digest('hex');
  },
};
