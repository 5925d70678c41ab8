// Lint: typescript-eslint's recommended rules, plus the import direction docs/architecture.md ("Code map") sets.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'cdk.out/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Only lib/storage builds AWS SDK commands; protocol and the pure rules never touch AWS.
    files: ['lib/protocol/**', 'lib/log/**', 'lib/cluster/**', 'lib/groups/**', 'lib/http/**', 'lambdas/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@aws-sdk/*'], message: 'AWS SDK calls live in lib/storage.' }] }],
    },
  },
  {
    // The API speaks to the log and the cluster; of storage it may know only the data shapes.
    files: ['lib/http/**', 'lambdas/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@aws-sdk/*'], message: 'AWS SDK calls live in lib/storage.' },
        { regex: 'storage/(?!model\\.js$)', message: 'lib/http reaches storage through lib/log and lib/cluster.' },
      ] }],
      // zod's `z` export is a namespace holding every locale: imported by name, all of them (~370 KiB) land in each HTTP bundle.
      'no-restricted-syntax': ['error', {
        selector: "ImportDeclaration[source.value='zod'] > :matches(ImportSpecifier[imported.name='z'], ImportDefaultSpecifier)",
        message: "Write `import * as z from 'zod'`: esbuild then keeps only the parts used.",
      }],
    },
  },
  {
    // The console is a client like any other: the public HTTP API through the SDK, nothing below it.
    files: ['console/src/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { regex: '^(\\.\\./)+lib/(?!client/)', message: 'The console reaches the cluster only through the SDK (lib/client).' },
        { group: ['@aws-sdk/*'], message: 'The console reaches the cluster only through the SDK (lib/client).' },
      ] }],
    },
  },
  {
    files: ['lib/protocol/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@aws-sdk/*'], message: 'lib/protocol is pure bytes.' },
        { group: ['../storage/*', '../log/*', '../cluster/*', '../http/*', '../local/*'], message: 'lib/protocol imports nothing above it.' },
      ] }],
    },
  },
);
