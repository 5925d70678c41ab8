/**
 * `tributary schemas list|versions|get|get-id|register|check|delete|config|diff`: the cluster's
 * schema registry through the SDK's SchemaRegistry (`tributary/schemas`), as tables (or `--json`).
 * `check` exits 4 when the schema is incompatible; `diff` is a unified line diff of two versions'
 * text (JSON pretty-printed for AVRO and JSON), made by jsdiff.
 */
import fs from 'node:fs';
import { Option, type Command } from 'commander';
import { createTwoFilesPatch } from 'diff';
import type { Tributary } from '../client/index.js';
import {
  COMPATIBILITY_LEVELS, SchemaRegistry, isRegistryError, type CompatibilityLevel, type RegistrySchema, type SchemaDescription, type SchemaType,
} from '../client/schemas.js';
import { EXIT, printJson, printTable, UsageError } from './output.js';

type Ctx = () => { t: Tributary; json: boolean };

const TYPES: readonly SchemaType[] = ['AVRO', 'JSON', 'PROTOBUF'];

/** A version argument: a number from 1, or `latest`. */
function versionArg(v: string | undefined, what = 'version'): number | 'latest' {
  if (v === undefined || v === 'latest' || v === '-1') return 'latest';
  if (!/^\d{1,10}$/.test(v) || Number(v) < 1) throw new UsageError(`The ${what} is a number from 1, or latest; got '${v}'.`);
  return Number(v);
}

/** The schema a `register` or `check` names: its type and its text, from --file or --schema. */
function schemaArg(o: { type: SchemaType; file?: string; schema?: string }): RegistrySchema {
  if ((o.file === undefined) === (o.schema === undefined)) throw new UsageError('Give the schema with --file or --schema (one of them).');
  let text = o.schema;
  if (o.file !== undefined) {
    try {
      text = fs.readFileSync(o.file, 'utf8');
    } catch (e) {
      throw new UsageError(`Cannot read --file ${o.file}: ${(e as Error).message}`);
    }
  }
  return { type: o.type, schema: text as string };
}

/** A schema's text for people: AVRO and JSON pretty-printed, PROTOBUF as it is. */
export function schemaText(d: Pick<SchemaDescription, 'type' | 'schema'>): string {
  if (d.type === 'PROTOBUF') return d.schema.endsWith('\n') ? d.schema : `${d.schema}\n`;
  try {
    return `${JSON.stringify(JSON.parse(d.schema), null, 2)}\n`;
  } catch {
    return `${d.schema}\n`;
  }
}

const refsOf = (d: SchemaDescription) => d.references.map((r) => `${r.name}=${r.subject}:${r.version}`).join(' ');

const schemaOptions = (c: Command) => c
  .addOption(new Option('--type <type>', 'the schema type').choices(TYPES).makeOptionMandatory())
  .option('--file <path>', 'read the schema from a file')
  .option('--schema <text>', 'the schema text itself');

export function schemaCommands(p: Command, ctx: Ctx): void {
  const schemas = p.command('schemas').description('the schema registry: subjects, versions, schemas, compatibility and levels');
  const registry = () => {
    const { t, json } = ctx();
    return { r: new SchemaRegistry(t), json };
  };

  schemas.command('list').description('subjects with a live version').option('--deleted', 'soft-deleted subjects too')
    .action(async (o: { deleted?: boolean }) => {
      const { r, json } = registry();
      const subjects = await r.getSubjects({ deleted: o.deleted ?? false });
      if (json) return printJson(subjects);
      printTable(['subject'], subjects.map((s) => [s]));
    });

  schemas.command('versions <subject>').description("the subject's version numbers").option('--deleted', 'soft-deleted versions too')
    .action(async (subject: string, o: { deleted?: boolean }) => {
      const { r, json } = registry();
      const [all, live] = await Promise.all([r.getVersions(subject, { deleted: o.deleted ?? false }), o.deleted ? r.getVersions(subject).catch((): number[] => []) : undefined]);
      if (json) return printJson(all);
      printTable(['version', ...(live ? ['deleted'] : [])], all.map((v) => [v, ...(live ? [live.includes(v) ? '' : 'yes'] : [])]));
    });

  schemas.command('get <subject> [version]').description("a version of the subject (default the latest): its id, version, type and schema")
    .option('--deleted', 'a soft-deleted version too')
    .action(async (subject: string, version: string | undefined, o: { deleted?: boolean }) => {
      const { r, json } = registry();
      const v = await r.getSubjectVersion(subject, versionArg(version), { deleted: o.deleted ?? false });
      if (json) return printJson(v);
      printTable(['subject', 'version', 'id', 'type', 'references'], [[v.subject, v.version, v.id, v.type, refsOf(v)]]);
      process.stdout.write(schemaText(v));
    });

  schemas.command('get-id <id>').description('the schema with this id, and the subject versions that hold it')
    .action(async (raw: string) => {
      if (!/^\d{1,10}$/.test(raw) || Number(raw) < 1) throw new UsageError(`A schema id is a number from 1; got '${raw}'.`);
      const { r, json } = registry();
      const id = Number(raw);
      const [d, versions] = await Promise.all([r.getSchema(id), r.getSchemaVersions(id)]);
      if (json) return printJson({ ...d, versions });
      printTable(['id', 'type', 'subject versions', 'references'], [[d.id, d.type, versions.map((v) => `${v.subject}:${v.version}`).join(' '), refsOf(d)]]);
      process.stdout.write(schemaText(d));
    });

  schemaOptions(schemas.command('register <subject>').description('register a schema under the subject (the same content again keeps its id and version)'))
    .action(async (subject: string, o: { type: SchemaType; file?: string; schema?: string }) => {
      const schema = schemaArg(o);
      const { r, json } = registry();
      const { id } = await r.register(schema, { subject });
      const version = (await r.getSchemaVersions(id)).filter((v) => v.subject === subject).map((v) => v.version).pop();
      if (json) return printJson({ subject, id, version });
      printTable(['subject', 'version', 'id'], [[subject, version, id]]);
    });

  schemaOptions(schemas.command('check <subject>')
    .description("whether the schema may follow the subject's versions under its level (exit 4 when it may not)")
    .option('--version <version>', 'test against this version only (a number or latest)'))
    .action(async (subject: string, o: { type: SchemaType; file?: string; schema?: string; version?: string }) => {
      const schema = schemaArg(o);
      const { r, json } = registry();
      const result = await r.checkCompatibility(subject, schema, o.version !== undefined ? { version: versionArg(o.version, '--version') } : {});
      if (!result.isCompatible) process.exitCode = EXIT.INCOMPATIBLE;
      if (json) return printJson(result);
      process.stdout.write(result.isCompatible ? 'compatible\n' : 'incompatible\n');
      for (const m of result.messages) process.stdout.write(`  ${m}\n`);
    });

  schemas.command('delete <subject> [version]')
    .description('soft-delete the subject (every live version) or one version; --permanent removes it for good (soft-deleting it first)')
    .option('--permanent', 'delete permanently')
    .action(async (subject: string, version: string | undefined, o: { permanent?: boolean }) => {
      const { r, json } = registry();
      let deleted: number[];
      if (version === undefined) {
        if (o.permanent) await r.deleteSubject(subject).catch((e) => { if (!isRegistryError(e, 40404)) throw e; });
        deleted = await r.deleteSubject(subject, { permanent: o.permanent ?? false });
      } else {
        const v = versionArg(version);
        if (o.permanent) await r.deleteSubjectVersion(subject, v).catch((e) => { if (!isRegistryError(e, 40406)) throw e; });
        deleted = [await r.deleteSubjectVersion(subject, v, { permanent: o.permanent ?? false })];
      }
      if (json) return printJson(deleted);
      process.stderr.write(`${o.permanent ? 'Permanently deleted' : 'Soft-deleted'} ${subject} version${deleted.length === 1 ? '' : 's'} ${deleted.join(', ')}\n`);
    });

  schemas.command('config [subject]').description("the subject's compatibility level (its own, else the global one), or the global one; --set changes it")
    .addOption(new Option('--set <level>', 'set this level').choices(COMPATIBILITY_LEVELS))
    .action(async (subject: string | undefined, o: { set?: CompatibilityLevel }) => {
      const { r, json } = registry();
      let level: CompatibilityLevel;
      let source: 'subject' | 'global' = subject === undefined ? 'global' : 'subject';
      if (o.set) {
        level = await r.setConfig(o.set, subject);
      } else if (subject === undefined) {
        level = await r.getConfig();
      } else {
        try {
          level = await r.getConfig(subject);
        } catch (e) {
          if (!isRegistryError(e, 40408)) throw e;
          level = await r.getConfig();
          source = 'global';
        }
      }
      if (json) return printJson({ ...(subject !== undefined ? { subject } : {}), compatibilityLevel: level, source });
      printTable(['subject', 'compatibility level', 'from'], [[subject ?? '(global)', level, source]]);
    });

  schemas.command('diff <subject> <v1> <v2>').description("a line diff of two versions' schemas (AVRO and JSON pretty-printed)")
    .action(async (subject: string, a: string, b: string) => {
      const { r, json } = registry();
      const [from, to] = await Promise.all([r.getSubjectVersion(subject, versionArg(a, 'v1'), { deleted: true }), r.getSubjectVersion(subject, versionArg(b, 'v2'), { deleted: true })]);
      const patch = createTwoFilesPatch(`${subject} version ${from.version}`, `${subject} version ${to.version}`, schemaText(from), schemaText(to), `id ${from.id}`, `id ${to.id}`);
      const identical = schemaText(from) === schemaText(to);
      if (json) return printJson({ subject, from: { version: from.version, id: from.id }, to: { version: to.version, id: to.id }, identical, patch });
      if (identical) process.stderr.write(`Versions ${from.version} and ${to.version} of ${subject} have the same schema text\n`);
      else process.stdout.write(patch.replace(/^=+\n/m, ''));
    });
}
