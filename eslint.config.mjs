// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * eslint with typescript-eslint's recommended rules over the TypeScript of the repository; formatting
 * is prettier's (`npm run format:check`), so no rule here is about layout. CI runs `npm run lint`.
 */
export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'cdk.out/', 'docs/examples/', '**/*.d.ts', 'lib/domain/mapping/sha256-simd-wasm.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_name` marks a parameter an interface makes us take and we do not read.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Tests read synthesized templates and HTTP bodies, JSON of whatever shape the test is about.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: {
      globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly', __filename: 'readonly', console: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
