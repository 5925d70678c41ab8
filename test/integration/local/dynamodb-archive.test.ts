/**
 * DynamoDB Local's class data archive (lib/local/dynamodb-archive.ts): two builders racing in one
 * cache end with one whole jar and archive, and a store launched from them maps the archive.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDynamoDbLaunch, classPathManifest } from '../../../local/dynamodb-archive.js';
import { checkJava, defaultJvmFlags, dynamoDbCommand, dynamoDbJarDir } from '../../../local/java.js';
import { answersHttp, freePort } from '../../../local/ports.js';
import { until } from '../../support/cluster.js';

const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-archive-'));
afterAll(() => fs.rmSync(cache, { recursive: true, force: true }));

describe('classPathManifest', () => {
  it('keeps only the shipped Class-Path\'s jars, in their order, in manifest lines of at most 72 bytes', () => {
    const shipped = [
      'Manifest-Version: 1.0',
      'Main-Class: software.amazon.dynamodb.services.local.main.ServerRunner',
      'Class-Path: . log4j2.xml DynamoDBLocal_lib/b.jar DynamoDBLocal_lib/libsqlite4java-linux-amd64.so Dy',
      ' namoDBLocal_lib/a.jar DynamoDBLocal_lib/sqlite4java-win32-x64.dll ',
      // (a continuation line's first space is the fold; the second separates the entries)
      ...Array.from({ length: 30 }, (_, i) => `  DynamoDBLocal_lib/lib-${i}.jar`),
      '',
    ].join('\r\n');
    const text = classPathManifest(shipped);
    const lines = text.trimEnd().split('\n');
    for (const l of lines) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(72);
    expect(lines.slice(1).every((l) => l.startsWith(' '))).toBe(true);
    const entries = lines.map((l, i) => (i === 0 ? l : l.slice(1))).join('').replace(/^Class-Path: /, '').split(' ');
    expect(entries).toHaveLength(32);
    expect(entries.slice(0, 3)).toEqual(['DynamoDBLocal_lib/b.jar', 'DynamoDBLocal_lib/a.jar', 'DynamoDBLocal_lib/lib-0.jar']);
    expect(entries.every((e) => e.endsWith('.jar'))).toBe(true);
  });
});

describe('building the archive', () => {
  it('two builders at once: both get the same jar and archive, nothing partial is left, and a store started from them maps the archive', async () => {
    const java = await checkJava();
    const [a, b] = await Promise.all([0, 1].map(() => buildDynamoDbLaunch(dynamoDbJarDir(), defaultJvmFlags(), java.banner, cache)));
    expect(a).toEqual(b);
    expect(fs.statSync(a!.archive!).size).toBeGreaterThan(1_000_000);
    expect(fs.readdirSync(cache)).toEqual([path.basename(path.dirname(a!.jar))]);
    expect(fs.readdirSync(path.dirname(a!.jar)).sort()).toEqual(['DynamoDBLocal.jar', 'DynamoDBLocal_lib', 'MANIFEST.MF', 'dynamodb.jsa']);
    // A third finds them and builds nothing.
    const before = fs.statSync(a!.archive!).mtimeMs;
    expect(await buildDynamoDbLaunch(dynamoDbJarDir(), defaultJvmFlags(), java.banner, cache)).toEqual(a);
    expect(fs.statSync(a!.archive!).mtimeMs).toBe(before);

    const port = await freePort();
    const cmd = dynamoDbCommand(port, null, defaultJvmFlags(), a);
    let log = '';
    const child = spawn(cmd.file, cmd.args, { cwd: cmd.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    try {
      await until('the store to answer', async () => answersHttp(port, 1000), 30_000);
      // Mapped, not ignored: a JVM that cannot use an archive warns and reads the jars instead.
      if (fs.existsSync('/proc/self/maps')) expect(fs.readFileSync(`/proc/${child.pid}/maps`, 'utf8')).toContain(a!.archive);
      expect(log).not.toMatch(/Unable to use shared archive/);
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);

  it('ends a dump JVM whose builder died (and its partial archive), and leaves a live builder\'s alone', async () => {
    const java = await checkJava();
    const { jar } = await buildDynamoDbLaunch(dynamoDbJarDir(), defaultJvmFlags(), java.banner, cache);
    const dir = path.dirname(jar);
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => gone.once('exit', r));
    // Stand-ins for dump JVMs, by their command line: one whose builder is gone, one whose builder is this process.
    const fake = () => spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', `-XX:ArchiveClassesAtExit=${dir}/dynamodb.jsa.x`]);
    const orphan = fake();
    const kept = fake();
    try {
      fs.writeFileSync(path.join(dir, `dump-${orphan.pid}`), String(gone.pid));
      fs.writeFileSync(path.join(dir, `dynamodb.jsa.${gone.pid}.abc`), 'partial');
      fs.writeFileSync(path.join(dir, `dump-${kept.pid}`), String(process.pid));
      await buildDynamoDbLaunch(dynamoDbJarDir(), defaultJvmFlags(), java.banner, cache);
      expect(await until('the orphan to end', async () => orphan.signalCode ?? undefined, 10_000)).toBe('SIGKILL');
      expect(fs.readdirSync(dir).filter((f) => /^dump-|\.abc$/.test(f))).toEqual([`dump-${kept.pid}`]);
      expect(kept.exitCode).toBeNull();
    } finally {
      orphan.kill('SIGKILL');
      kept.kill('SIGKILL');
      fs.rmSync(path.join(dir, `dump-${kept.pid}`), { force: true });
    }
  });

  it('a dump that fails (twice: once could be a port lost to another process) is remembered: the next builder does not try again and fails with the reason', async () => {
    const java = await checkJava();
    const flags = [...defaultJvmFlags(), '-XX:+NoSuchOptionAnywhere'];
    await expect(buildDynamoDbLaunch(dynamoDbJarDir(), flags, java.banner, cache)).rejects.toThrow(/exited before it answered/);
    // (only the remembered failure names the way to try again)
    await expect(buildDynamoDbLaunch(dynamoDbJarDir(), flags, java.banner, cache)).rejects.toThrow(/exited before it answered .*\(remove .* to try again\)/);
  }, 90_000);
});
