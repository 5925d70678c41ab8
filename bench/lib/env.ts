/**
 * The environment every benchmark that loads the library runs in, set before any of it is
 * evaluated: a benchmark imports this module FIRST (`import './lib/env.js';`). ES modules evaluate
 * their static imports in order, so every module imported after this one sees these defaults —
 * lib/logger.ts reads LOG_LEVEL when it is evaluated. Every bench/lib module that imports the
 * library imports this one first too, so none of them depends on the order a benchmark writes.
 * Defaults only (`??=`): a value set by the caller, or by a module imported before this one
 * (bench/lib/fault-settings.ts), stands.
 */
/** Only warnings and errors: a benchmark's output is its tables, not the stack's info lines. */
process.env.LOG_LEVEL ??= 'warn';
/** The AWS SDK warns once per process about the Node version; the benchmarks pin their Node. */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
