/**
 * Class data sharing (CDS) for DynamoDB Local: a JVM that maps an archive of the classes a store
 * loads at start, instead of reading and verifying them from ~120 jars, is ready in ≈1.0 s instead
 * of ≈1.6 s and spends ≈1.1 s of CPU instead of ≈1.7 s (measured on this machine, Java 17, our
 * flags). The test suite starts DynamoDB Local dozens of times, so this is CPU it gets back.
 *
 * The jar as shipped cannot be archived: its manifest's Class-Path lists `.` (a non-empty
 * directory, which CDS refuses) and native libraries (which turn archived classes off). So, once
 * per Java build, DynamoDB Local jar and JVM flags, this builds in
 * `node_modules/.cache/tributary-dynamodb/<key>/`:
 * - a copy of DynamoDBLocal.jar whose Class-Path lists only the jars (the JDK's `jar` tool
 *   rewrites the manifest), beside a link to the shipped `DynamoDBLocal_lib` (where the native
 *   libraries are still found through `-Djava.library.path`);
 * - the archive, written by one JVM run with `-XX:ArchiveClassesAtExit` that creates tables and
 *   reads a stream before it exits.
 * Each is written under a temporary name and renamed into place, so concurrent builders never see
 * a partial one. Anything missing or failing (no `jar` tool, a JRE only, a dump that fails) leaves
 * the stores starting as before, from the shipped jar; a failed dump is remembered in the cache,
 * so later processes do not pay for it again. A JVM that finds the archive does not match it
 * ignores it with a warning in the store's log.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { logger } from '../lib/logger.js';
import { answersHttp, freePort, sleep } from './ports.js';

const run = promisify(execFile);

/** How a store's JVM is launched: the jar, and the archive to map if there is one. */
export interface DynamoDbLaunch {
  readonly jar: string;
  readonly archive?: string;
}

const DEFAULT_CACHE = path.join(import.meta.dirname, '..', 'node_modules', '.cache', 'tributary-dynamodb');
const ARCHIVE = 'dynamodb.jsa';
/** Left in the cache when the dump failed, with why. */
const FAILED = 'unavailable';

let prepared: Promise<DynamoDbLaunch | undefined> | undefined;
let launch: DynamoDbLaunch | undefined;

/** The prepared launch, once {@link prepareDynamoDbLaunch} has resolved in this process (else undefined: the shipped jar). */
export const preparedDynamoDbLaunch = (): DynamoDbLaunch | undefined => launch;

/**
 * Finds or builds the archive for `jarDir`'s DynamoDB Local run with `jvmFlags`; memoized per
 * process. Resolves undefined (use the shipped jar) when it cannot be built, and never rejects.
 */
export function prepareDynamoDbLaunch(jarDir: string, jvmFlags: readonly string[], javaVersion: string): Promise<DynamoDbLaunch | undefined> {
  prepared ??= buildDynamoDbLaunch(jarDir, jvmFlags, javaVersion, DEFAULT_CACHE).then((l) => (launch = l), (err: unknown) => {
    logger.warn({ event: 'dynamodb-archive-unavailable', err: (err as Error).message }, 'DynamoDB Local starts without a class data archive (slower; TRIBUTARY_DYNAMODB_ARCHIVE=off silences this)');
    return undefined;
  });
  return prepared;
}

/**
 * Finds or builds, under `cache`, the repacked jar and the archive for this Java, DynamoDB Local
 * and flags. Safe to run from several processes at once: each piece appears under its final name
 * only when whole. A second builder of the jar uses the first one's; builders that dump at the
 * same time each write a whole archive, and the last rename wins.
 */
export async function buildDynamoDbLaunch(jarDir: string, jvmFlags: readonly string[], javaVersion: string, cache: string): Promise<DynamoDbLaunch> {
  const dir = path.join(cache, cacheKey(jarDir, jvmFlags, javaVersion));
  const jar = path.join(dir, 'DynamoDBLocal.jar');
  const archive = path.join(dir, ARCHIVE);
  const failed = path.join(dir, FAILED);
  if (fs.existsSync(dir)) sweepOrphans(dir);
  if (fs.existsSync(archive)) return { jar, archive };
  // A JVM that cannot dump (no base archive, say) fails the same way every time: once is enough.
  if (fs.existsSync(failed)) throw new Error(`${fs.readFileSync(failed, 'utf8')} (remove ${dir} to try again)`);

  // The jar first, at its final path: the archive records the class path it was made with.
  if (!fs.existsSync(jar)) {
    fs.mkdirSync(cache, { recursive: true });
    prune(cache, path.basename(dir));
    const building = fs.mkdtempSync(path.join(cache, 'building-'));
    try {
      const copy = path.join(building, 'DynamoDBLocal.jar');
      fs.copyFileSync(path.join(jarDir, 'DynamoDBLocal.jar'), copy);
      fs.symlinkSync(path.join(jarDir, 'DynamoDBLocal_lib'), path.join(building, 'DynamoDBLocal_lib'));
      await run(jarTool(), ['--extract', '--file', copy, 'META-INF/MANIFEST.MF'], { cwd: building, timeout: 60_000 });
      const manifest = path.join(building, 'MANIFEST.MF');
      fs.writeFileSync(manifest, classPathManifest(fs.readFileSync(path.join(building, 'META-INF', 'MANIFEST.MF'), 'utf8')));
      fs.rmSync(path.join(building, 'META-INF'), { recursive: true });
      await run(jarTool(), ['--update', '--file', copy, `--manifest=${manifest}`], { timeout: 60_000 });
      fs.renameSync(building, dir);
    } catch (err) {
      fs.rmSync(building, { recursive: true, force: true });
      // another process put it in place first: theirs is as good
      if (!fs.existsSync(jar)) throw err;
    }
  }
  // Then the archive, under a name of its own until it is whole.
  const partial = path.join(dir, `${ARCHIVE}.${process.pid}.${Math.random().toString(36).slice(2)}`);
  const started = performance.now();
  try {
    // (a JVM that exits before it answers may have lost its port to another process: twice is telling)
    await dump(jar, partial, jarDir, jvmFlags).catch((err: unknown) => {
      if (err instanceof DumpRefused) return dump(jar, partial, jarDir, jvmFlags);
      throw err;
    });
    fs.renameSync(partial, archive);
  } catch (err) {
    // Only what would fail again is remembered; a busy machine's timeout is tried again next time.
    if (err instanceof DumpRefused) fs.writeFileSync(failed, err.message);
    throw err;
  } finally {
    fs.rmSync(partial, { force: true });
  }
  logger.info({ event: 'dynamodb-archive-built', archive, ms: Math.round(performance.now() - started) }, 'DynamoDB Local class data archive built (once per machine)');
  return { jar, archive };
}

/** The JVM refused to run or to dump: what it will do again with the same Java, jar and flags. */
class DumpRefused extends Error {}

/**
 * What the archive depends on: the Java build (its banner and where it is), the shipped jar's bytes
 * and every library jar's name, size and time (the JVM checks those of each class path entry
 * against the archive, and ignores an archive that does not match), and the JVM flags.
 */
function cacheKey(jarDir: string, jvmFlags: readonly string[], javaVersion: string): string {
  const libDir = path.join(jarDir, 'DynamoDBLocal_lib');
  const libs = fs.readdirSync(libDir).sort().map((f) => {
    const st = fs.statSync(path.join(libDir, f));
    return [f, st.size, st.mtimeMs];
  });
  const shipped = createHash('sha256').update(fs.readFileSync(path.join(jarDir, 'DynamoDBLocal.jar'))).digest('hex');
  return createHash('sha256').update(JSON.stringify([javaVersion, javaOnPath(), jarDir, shipped, libs, jvmFlags])).digest('hex').slice(0, 16);
}

/**
 * The shipped manifest's Class-Path with only its jars, in their order (classes in more than one
 * jar resolve to the first), wrapped at 72 bytes as manifests must be. The shipped one also lists
 * `.` and the native libraries, which class data sharing refuses.
 */
export function classPathManifest(shipped: string): string {
  const unfolded = shipped.replace(/\r\n/g, '\n').replace(/\n /g, '');
  const classPath = /^Class-Path: (.*)$/m.exec(unfolded)?.[1];
  if (classPath === undefined) throw new DumpRefused('the shipped DynamoDBLocal.jar has no Class-Path');
  const jars = classPath.split(' ').filter((e) => e.endsWith('.jar'));
  const line = `Class-Path: ${jars.join(' ')}`;
  const lines = [line.slice(0, 72)];
  for (let i = 72; i < line.length; i += 71) lines.push(` ${line.slice(i, i + 71)}`);
  return `${lines.join('\n')}\n`;
}

/** The real path of the `java` on PATH, or undefined. */
function javaOnPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const java = path.join(dir, 'java');
    if (fs.existsSync(java)) return fs.realpathSync(java);
  }
  return undefined;
}

/** The `jar` tool beside the `java` on PATH (a JDK's), else any on PATH. */
function jarTool(): string {
  const java = javaOnPath();
  const sibling = java && path.join(path.dirname(java), 'jar');
  return sibling && fs.existsSync(sibling) ? sibling : 'jar';
}

const DAY_MS = 24 * 3600_000;

/** Removes other keys' folders and abandoned builds not touched for a day (old Java builds or flags; ~45 MB each). */
function prune(cache: string, keep: string): void {
  for (const name of fs.readdirSync(cache)) {
    const p = path.join(cache, name);
    if (name !== keep && Date.now() - fs.statSync(p).mtimeMs > DAY_MS) fs.rmSync(p, { recursive: true, force: true });
  }
}

/**
 * A dump JVM whose builder died without its exit handler (SIGKILL; vitest ends its workers so)
 * would run on: each dump leaves `dump-<jvm pid>` naming its builder's pid, and whoever finds one
 * whose builder is gone ends that JVM and removes its partial archive.
 */
function sweepOrphans(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    const m = /^dump-(\d+)$/.exec(name);
    if (!m) continue;
    const owner = Number(fs.readFileSync(path.join(dir, name), 'utf8'));
    if (alive(owner)) continue;
    endDump(Number(m[1]), dir);
    for (const f of fs.readdirSync(dir)) if (f.startsWith(`${ARCHIVE}.${owner}.`)) fs.rmSync(path.join(dir, f), { force: true });
    fs.rmSync(path.join(dir, name), { force: true });
  }
}

/** SIGKILLs `pid` if it is still a dump JVM writing into `dir` (not a process that took its pid since). */
function endDump(pid: number, dir: string): void {
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return; // gone (or no /proc to tell: leave it)
  }
  if (!cmdline.includes(`-XX:ArchiveClassesAtExit=${dir}`)) return;
  try { process.kill(pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One run of the repacked jar that writes the archive to `out` at exit, after the kinds of request a stack makes. */
async function dump(jar: string, out: string, jarDir: string, jvmFlags: readonly string[]): Promise<void> {
  const port = await freePort();
  const child = spawn('java', [
    ...jvmFlags, `-XX:ArchiveClassesAtExit=${out}`,
    `-Djava.library.path=${path.join(jarDir, 'DynamoDBLocal_lib')}`,
    '-jar', jar, '-sharedDb', '-disableTelemetry', '-port', String(port), '-inMemory',
  ], { cwd: path.dirname(jar), stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(null));
  });
  const owner = child.pid === undefined ? undefined : path.join(path.dirname(jar), `dump-${child.pid}`);
  if (owner) fs.writeFileSync(owner, String(process.pid));
  const stop = () => child.kill('SIGKILL');
  process.once('exit', stop);
  try {
    const deadline = Date.now() + 60_000;
    while (!(await answersHttp(port, 1000))) {
      if (child.exitCode !== null || child.pid === undefined) throw new DumpRefused(`the archiving JVM exited before it answered (exit ${child.exitCode})`);
      if (Date.now() > deadline) throw new Error('the archiving JVM did not answer within 60 s');
      await sleep(50);
    }
    await warmUp(`http://127.0.0.1:${port}`);
    child.kill('SIGTERM'); // a normal exit: the archive is written then
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => (timer = setTimeout(resolve, 60_000, 'timeout')))]);
    clearTimeout(timer);
    if (code === 'timeout') throw new Error('the archiving JVM did not exit within 60 s');
    if (!fs.existsSync(out)) throw new DumpRefused(`the archiving JVM wrote no archive (exit ${code})`);
  } finally {
    stop();
    process.removeListener('exit', stop);
    if (owner) fs.rmSync(owner, { force: true });
  }
}

/**
 * The kinds of request a stack makes, in DynamoDB's JSON protocol (DynamoDB Local checks no
 * signature, and this runs before any stack has set credentials), so that the classes serving
 * them are in the archive. A request that fails only leaves its classes out.
 */
async function warmUp(endpoint: string): Promise<void> {
  const call = async (target: string, body: object): Promise<Record<string, unknown>> => fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': target,
      authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  }).then((r) => r.json() as Promise<Record<string, unknown>>).catch(() => ({}));
  const db = (op: string, body: object) => call(`DynamoDB_20120810.${op}`, body);
  const TableName = 'archive-warm-up';
  const key = (off: number) => ({ tp: { S: 'warm#0' }, off: { N: String(off) } });
  await db('CreateTable', {
    TableName, BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'tp', AttributeType: 'S' }, { AttributeName: 'off', AttributeType: 'N' }],
    KeySchema: [{ AttributeName: 'tp', KeyType: 'HASH' }, { AttributeName: 'off', KeyType: 'RANGE' }],
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
  });
  const table = await db('DescribeTable', { TableName });
  await db('PutItem', { TableName, Item: { ...key(-1), leo: { N: '0' } }, ConditionExpression: 'attribute_not_exists(tp)' });
  await db('UpdateItem', {
    TableName, Key: key(-1), UpdateExpression: 'SET leo = :n', ConditionExpression: 'leo = :o',
    ExpressionAttributeValues: { ':n': { N: '1' }, ':o': { N: '0' } }, ReturnValues: 'ALL_NEW',
  });
  await db('TransactWriteItems', { TransactItems: [{ Put: { TableName, Item: { ...key(0), b: { B: 'AA==' } } } }] });
  await db('GetItem', { TableName, Key: key(-1), ConsistentRead: true });
  await db('BatchGetItem', { RequestItems: { [TableName]: { Keys: [key(-1), key(0)] } } });
  await db('Query', { TableName, KeyConditionExpression: 'tp = :tp AND off >= :o', ExpressionAttributeValues: { ':tp': { S: 'warm#0' }, ':o': { N: '0' } } });
  const streamArn = (table.Table as { LatestStreamArn?: string } | undefined)?.LatestStreamArn;
  if (streamArn) {
    const stream = await call('DynamoDBStreams_20120810.DescribeStream', { StreamArn: streamArn });
    const shardId = (stream.StreamDescription as { Shards?: { ShardId: string }[] } | undefined)?.Shards?.[0]?.ShardId;
    if (shardId) {
      const it = await call('DynamoDBStreams_20120810.GetShardIterator', { StreamArn: streamArn, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' });
      if (typeof it.ShardIterator === 'string') await call('DynamoDBStreams_20120810.GetRecords', { ShardIterator: it.ShardIterator });
    }
  }
  await db('DeleteTable', { TableName });
}
