// Lint: typescript-eslint's recommended rules, plus the layering docs/architecture.md opens with:
//   apps (cdk, local, chaos, cli, bench, build, console) → handlers (lambdas) → lib/http →
//   lib/orchestration → lib/{groups, security} → lib/log → lib/cluster → lib/storage →
//   lib/protocol and the basics at lib's root; lib/schemas (the schema registry) sits beside the
//   domain, on lib/storage alone; the SDK (client) sits on lib/protocol alone, its schemas entry on
//   lib/schemas' parsers and wire format too.
// import-x's no-restricted-paths keeps every arrow pointing down, no-cycle keeps files out of circles.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';

const APPS = ['./cdk', './local', './chaos', './cli', './bench', './build', './console', './bin', './test'];
const LIB = './lib';
/** Each lib folder, and the folders above it that it must not import. */
const ABOVE = {
  'lib/orchestration': ['lib/http'],
  'lib/groups': ['lib/http', 'lib/orchestration', 'lib/security'],
  'lib/security': ['lib/http', 'lib/orchestration', 'lib/groups', 'lib/log'],
  'lib/log': ['lib/http', 'lib/orchestration', 'lib/groups', 'lib/security'],
  'lib/cluster': ['lib/http', 'lib/orchestration', 'lib/groups', 'lib/security', 'lib/log'],
  'lib/schemas': ['lib/http', 'lib/orchestration', 'lib/groups', 'lib/security', 'lib/log', 'lib/cluster'],
  'lib/functions': ['lib/http', 'lib/orchestration', 'lib/groups', 'lib/security', 'lib/log', 'lib/cluster', 'lib/schemas'],
  'lib/storage': ['lib/http', 'lib/orchestration', 'lib/groups', 'lib/security', 'lib/log', 'lib/cluster', 'lib/functions', 'lib/schemas'],
};
const LIB_FOLDERS = ['http', 'orchestration', 'groups', 'security', 'log', 'cluster', 'schemas', 'functions', 'storage'].map((f) => `./lib/${f}`);

const zones = [
  // The library and the handlers know nothing of the apps that run them.
  { target: LIB, from: [...APPS, './lambdas', './client'], message: 'lib/ is the library: apps import it, never the reverse.' },
  { target: './lambdas', from: [...APPS, './client'], message: 'Handlers import the library only.' },
  // Down the floors of lib/.
  ...Object.entries(ABOVE).map(([target, above]) => ({
    target: `./${target}`, from: above.map((a) => `./${a}`), message: `${target} sits below ${above.join(', ')} (docs/architecture.md, "Layers").`,
  })),
  // The codec and the error table are pure: nothing else in lib/.
  { target: './lib/protocol', from: [...LIB_FOLDERS, './lib/config.ts', './lib/errors.ts', './lib/logger.ts', './lib/deadline.ts', './lib/metrics.ts'], message: 'lib/protocol imports nothing above it.' },
  // The basics at lib's root (config, errors, logger, deadline, metrics, map-limit) sit on lib/protocol alone.
  ...['config', 'errors', 'logger', 'deadline', 'metrics', 'map-limit'].map((f) => ({
    target: `./lib/${f}.ts`, from: LIB_FOLDERS, message: "The basics at lib's root import nothing above lib/protocol.",
  })),
  // The apps, one above the other: the CLI and the chaos harness run the local stack, which runs the bundles.
  { target: './build', from: ['./cdk', './local', './chaos', './cli', './bench', './test'], message: 'build/ is below every app that bundles.' },
  { target: './local', from: ['./cdk', './chaos', './cli', './bench', './test'], message: 'local/ is below the apps that start it.' },
  { target: './chaos', from: ['./cdk', './cli', './bench', './test'], message: 'chaos/ runs the local stack; nothing but bench and tests run it.' },
  { target: './cdk', from: ['./local', './chaos', './cli', './bench', './test'], message: 'cdk/ deploys the library and the bundles only.' },
  { target: './bench', from: ['./test'], message: 'Benchmarks do not import tests.' },
  // The SDK runs in browsers and edge runtimes: of the library, only the protocol; its schemas entry
  // (client/schemas.ts) also the registry's parsers and wire format, never the registry's storage.
  { target: './client', from: [LIB, ...APPS, './lambdas'], except: ['./protocol', './schemas', './bounded-cache.ts'], message: 'The SDK imports lib/protocol only (its schemas entry: the parsers and wire format of lib/schemas too).' },
  { target: './client/!(schema-registry|schemas).ts', from: ['./lib/schemas', './lib/bounded-cache.ts'], message: 'Only the schemas entry imports lib/schemas: the core SDK carries no avsc, ajv or protobufjs.' },
  {
    target: './client', from: ['cache', 'configs', 'deserialize', 'registry', 'serialize', 'subjects'].map((f) => `./lib/schemas/${f}.ts`),
    message: "The SDK's schemas entry takes the parsers and wire format of lib/schemas, not the registry's storage.",
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'cdk.out/', 'coverage/', '.tributary/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX },
    settings: {
      // The TypeScript sources that imports name as `.js` (NodeNext), parsed as TypeScript when a rule follows them.
      'import-x/extensions': ['.ts', '.tsx', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.tsx', '.js', '.mjs'], extensionAlias: { '.js': ['.ts', '.tsx', '.js'] } })],
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones }],
    },
  },
  {
    // A file holds one family of things; past this, split it by family.
    files: ['lib/**', 'lambdas/**', 'client/**', 'cli/**', 'local/**', 'chaos/**', 'build/**', 'cdk/**', 'console/**', 'bench/**'],
    rules: { 'max-lines': ['error', { max: 600, skipBlankLines: false, skipComments: false }] },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Only lib/storage builds AWS SDK commands; protocol, the pure rules and the SDK never touch AWS.
    files: ['lib/*.ts', 'lib/protocol/**', 'lib/functions/**', 'lib/log/**', 'lib/cluster/**', 'lib/schemas/**', 'lib/groups/**', 'lib/security/**', 'lib/orchestration/**', 'lib/http/**', 'lambdas/**', 'client/**'],
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
        { regex: '^(\\.\\./)+lib/', message: 'The console reaches the cluster only through the SDK (client/).' },
        { group: ['@aws-sdk/*'], message: 'The console reaches the cluster only through the SDK (client/).' },
      ] }],
    },
  },
);
