/**
 * Subjects and their versions: listing, reading by version, by id, and deleting — soft (the
 * version is kept, marked deleted, its schema id still resolves) then permanent (the version item
 * is removed; a permanent delete needs a soft one first, as in Confluent's registry). Schema ids
 * are never removed: records written with one stay decodable.
 */
import { deleteCompatibility, hardDeleteVersion, listAllVersions, listSubjectVersions, softDeleteVersion, type StoredVersion } from '../storage/coordination/schemas.js';
import { requireWritable } from './configs.js';
import { schemaNotFound, subjectNotFound, subjectNotSoftDeleted, subjectSoftDeleted, versionNotFound, versionNotSoftDeleted, versionSoftDeleted } from './errors.js';
import { checkSubject, parseVersion, pickVersion, schemaById, versionView, type VersionView } from './registry.js';

/** GET /subjects: subjects with a live version (any version, with `deleted`), sorted. */
export async function listSubjects(deleted: boolean): Promise<string[]> {
  const all = await listAllVersions();
  return [...new Set(all.filter((v) => deleted || !v.deleted).map((v) => v.subject))].sort();
}

/** GET /subjects/{s}/versions: version numbers (40401 when the subject has none). */
export async function listVersions(subject: string, deleted: boolean): Promise<number[]> {
  checkSubject(subject);
  const versions = (await listSubjectVersions(subject)).filter((v) => deleted || !v.deleted);
  if (versions.length === 0) throw subjectNotFound(subject);
  return versions.map((v) => v.version);
}

/** GET /subjects/{s}/versions/{v}. */
export async function getVersion(subject: string, version: string, deleted: boolean): Promise<VersionView> {
  checkSubject(subject);
  const wanted = parseVersion(version);
  return versionView(pickVersion(await listSubjectVersions(subject), subject, wanted, deleted));
}

/** DELETE /subjects/{s}: soft-deletes every live version, or with `permanent` removes the soft-deleted ones. Answers the version numbers. */
export async function deleteSubject(subject: string, permanent: boolean): Promise<number[]> {
  checkSubject(subject);
  await requireWritable();
  const versions = await listSubjectVersions(subject);
  if (versions.length === 0) throw subjectNotFound(subject);
  const live = versions.filter((v) => !v.deleted);
  if (!permanent) {
    if (live.length === 0) throw subjectSoftDeleted(subject);
    for (const v of live) await softDeleteVersion(subject, v.version);
    return live.map((v) => v.version);
  }
  if (live.length > 0) throw subjectNotSoftDeleted(subject);
  for (const v of versions) await hardDeleteVersion(subject, v.version);
  await deleteCompatibility(subject);
  return versions.map((v) => v.version);
}

/** DELETE /subjects/{s}/versions/{v}: soft, or with `permanent` (after a soft one) for good. Answers the version number. */
export async function deleteVersion(subject: string, version: string, permanent: boolean): Promise<number> {
  checkSubject(subject);
  const wanted = parseVersion(version);
  await requireWritable();
  const versions = await listSubjectVersions(subject);
  if (versions.length === 0) throw subjectNotFound(subject);
  const v: StoredVersion | undefined = wanted === 'latest'
    ? (permanent ? versions : versions.filter((x) => !x.deleted)).at(-1)
    : versions.find((x) => x.version === wanted);
  if (!v) throw versionNotFound(wanted);
  if (!permanent) {
    if (v.deleted) throw versionSoftDeleted(subject, v.version);
    if (!(await softDeleteVersion(subject, v.version))) throw versionSoftDeleted(subject, v.version);
    return v.version;
  }
  if (!v.deleted) throw versionNotSoftDeleted(subject, v.version);
  if (!(await hardDeleteVersion(subject, v.version))) throw versionNotFound(v.version);
  return v.version;
}

/** GET /schemas/ids/{id} and its /schema (40403 when there is no such id). */
export async function schemaOfId(raw: string) {
  const id = idParam(raw);
  const s = await schemaById(id);
  if (!s) throw schemaNotFound(`Schema ${raw} not found`);
  return s;
}

/** GET /schemas/ids/{id}/versions: the subjects' versions that hold it (live ones, all with `deleted`). */
export async function versionsOfId(raw: string, deleted: boolean): Promise<{ subject: string; version: number }[]> {
  const s = await schemaOfId(raw);
  const all = await listAllVersions();
  return all.filter((v) => v.id === s.id && (deleted || !v.deleted)).map((v) => ({ subject: v.subject, version: v.version }))
    .sort((a, b) => (a.subject === b.subject ? a.version - b.version : a.subject < b.subject ? -1 : 1));
}

/** GET /schemas/ids/{id}/subjects. */
export async function subjectsOfId(raw: string, deleted: boolean): Promise<string[]> {
  return [...new Set((await versionsOfId(raw, deleted)).map((v) => v.subject))];
}

/** The subjects with a version (deleted ones too) that holds the id; none for an id that is not one. */
export async function subjectsHoldingId(raw: string): Promise<string[]> {
  if (!/^\d{1,10}$/.test(raw)) return [];
  const id = Number(raw);
  return [...new Set((await listAllVersions()).filter((v) => v.id === id).map((v) => v.subject))];
}

function idParam(raw: string): number {
  if (!/^\d{1,10}$/.test(raw) || Number(raw) < 1 || Number(raw) > 2 ** 31 - 1) throw schemaNotFound(`Schema ${raw} not found`);
  return Number(raw);
}
