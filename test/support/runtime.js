const vm = require('vm');
const Runtime = require('jest-runtime').default;

/**
 * jest's runtime (jest.config.js `runtime`), with V8's code cache shared between the test files a
 * worker runs. jest compiles every module again for each test file, in that file's own context, and
 * V8 cannot reuse the earlier compilation (jest's scripts carry a dynamic-import callback, which
 * turns V8's own cache off). So aws-cdk-lib's ~1,300 modules were parsed and compiled afresh for
 * every synthesis test: about a sixth of the unit suite's CPU (docs/testing.md).
 *
 * Here each module is compiled as a script wrapping it in jest's module function (the parameters
 * jest injects, in its order). The first time a file is compiled its script is kept; the next time
 * (the next test file in this worker), if the transformed source is the same string, the code cache
 * made from that script (the functions it compiled while it ran included) is handed to V8. The string
 * comparison is the guard: V8 itself checks little more than the source's length (and its version
 * and flags). Modules are still evaluated afresh in
 * each test file's own context: only the parsing and compiling is shared. What is not a plain
 * CommonJS body (a `#!` line, a syntax error, a Node.js core module) goes to jest's own compile, so
 * its errors read as jest's.
 */
const scripts = new Map();
const dependencies = new Map();

/**
 * Whether jest-runtime still has the internals this runtime wraps (jest 30's `transformCache.transform`
 * and `executor.compile`). After a jest upgrade that changed them, tests run on jest's own runtime,
 * slower, and this says so once per worker.
 */
let warned = false;
function internalsAsExpected(runtime) {
  const executor = runtime.executor;
  const ok =
    typeof runtime.transformCache?.transform === 'function' &&
    typeof executor?.compile === 'function' &&
    Array.isArray(executor.injectedModuleParameters) &&
    typeof executor.dynamicImport === 'function' &&
    typeof executor.environment?.getVmContext === 'function' &&
    typeof executor.resolution?.isCoreModule === 'function';
  if (!ok && !warned) {
    warned = true;
    process.stderr.write(
      "test/support/runtime.js: jest-runtime's internals are not the ones this runtime wraps (jest 30); running without the shared code cache\n",
    );
  }
  return ok;
}

class CodeCachingRuntime extends Runtime {
  constructor(...args) {
    super(...args);
    if (!internalsAsExpected(this)) return;
    // A dependency's source read once per worker: node_modules does not change during a run, and jest
    // does not transform it (its default transformIgnorePatterns), so each test file read it again.
    const transformCache = this.transformCache;
    const transform = transformCache.transform.bind(transformCache);
    transformCache.transform = (filename, options) => {
      if (!filename.includes('/node_modules/') || options?.isInternalModule) return transform(filename, options);
      let code = dependencies.get(filename);
      if (code === undefined) dependencies.set(filename, (code = transform(filename, options)));
      return code;
    };
    const executor = this.executor;
    const compile = executor.compile.bind(executor);
    executor.compile = (source, filename) => {
      const context = executor.environment.getVmContext();
      if (context == null || source.startsWith('#!') || executor.resolution.isCoreModule(filename)) return compile(source, filename);
      const earlier = scripts.get(filename);
      let cachedData;
      if (earlier && earlier.source === source) {
        earlier.data ??= earlier.script.createCachedData();
        cachedData = earlier.data;
      }
      let script;
      try {
        // The source's first line keeps its line number; only its columns move by the wrapper's length.
        script = new vm.Script(`(function (${executor.injectedModuleParameters.join(', ')}) {${source}\n})`, {
          filename,
          cachedData,
          importModuleDynamically: (specifier, _script, attributes, phase) => executor.dynamicImport(specifier, filename, context, attributes, phase),
        });
      } catch {
        return compile(source, filename);
      }
      if (!cachedData || script.cachedDataRejected) scripts.set(filename, { source, script });
      return script.runInContext(context);
    };
  }
}

module.exports = CodeCachingRuntime;
