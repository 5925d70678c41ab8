/**
 * Confluent Schema Registry's API at the root of the HTTP API, as Confluent's clients call it
 * (docs/schema-registry.md): subjects and versions, schemas by id, compatibility levels, the
 * mode, the compatibility test. Bodies are JSON under `application/vnd.schemaregistry.v1+json`,
 * `application/vnd.schemaregistry+json` or `application/json`; answers use the first. The rules
 * live in lib/schemas/.
 */
import { SCHEMA_TYPES } from '../schemas/model.js';
import { globalLevel, deleteLevel, mode, setLevel, setMode, subjectLevel } from '../schemas/configs.js';
import { inFormat, lookup, register, schemaInput, testCompatibility, type VersionView } from '../schemas/registry.js';
import { deleteSubject, deleteVersion, getVersion, listSubjects, listVersions, schemaOfId, subjectsHoldingId, subjectsOfId, versionsOfId } from '../schemas/subjects.js';
import type { SchemaInput } from '../schemas/registry.js';
import { HttpError } from '../errors.js';
import { CLUSTER_RESOURCE } from './access.js';
import { parseJson, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import { requireAll, visible } from './enforce.js';

export const SCHEMA_REGISTRY_TYPE = 'application/vnd.schemaregistry.v1+json';
const ACCEPTED = ['application/vnd.schemaregistry.v1+json', 'application/vnd.schemaregistry+json', 'application/json', 'application/octet-stream'];

const ok = (body: unknown): ApiResponse => ({ status: 200, body, contentType: SCHEMA_REGISTRY_TYPE });
const flag = (req: ApiRequest, name: string): boolean => req.query[name] === 'true';
const subjectOf = (req: ApiRequest): string => req.params.subject ?? '';

/** The request's JSON body; 415 for a content type the registry does not take. */
function body(req: ApiRequest): unknown {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== '' && !ACCEPTED.includes(type)) {
    throw new HttpError(415, 415, `HTTP 415 Unsupported Media Type: use ${ACCEPTED.slice(0, 3).join(', ')}, not '${type}'.`);
  }
  return parseJson(req.body);
}

/** The read's `format` (Confluent's: `serialized` for a Protobuf descriptor). */
const formatOf = (req: ApiRequest): string | undefined => req.query.format;

/** A version as Confluent shows it: `schemaType` only when not AVRO, `references` only when there are some. */
const versionBody = async (v: VersionView, format: string | undefined) => ({
  subject: v.subject, version: v.version, id: v.id,
  ...(v.schemaType !== 'AVRO' ? { schemaType: v.schemaType } : {}),
  ...(v.references.length > 0 ? { references: v.references } : {}),
  schema: await inFormat(v, format),
});

/** A schema's own text: JSON for AVRO and JSON Schema, the .proto text or descriptor (as text/plain) for PROTOBUF. */
const raw = async (s: Parameters<typeof inFormat>[0], format: string | undefined): Promise<ApiResponse> =>
  ({ status: 200, body: await inFormat(s, format), contentType: s.schemaType === 'PROTOBUF' ? 'text/plain; charset=utf-8' : SCHEMA_REGISTRY_TYPE });

const asSubject = (s: string) => ({ resourceType: 'SUBJECT' as const, resourceName: s });

/** A schema's references need READ on the subjects they name (their schemas become part of it). */
async function readableInput(req: ApiRequest): Promise<SchemaInput> {
  const input = schemaInput(body(req));
  await requireAll(req, input.references.map((r) => ({ operation: 'READ', ...asSubject(r.subject) })));
  return input;
}

/**
 * A schema by id: READ on a subject holding it, or else CLUSTER DESCRIBE (an id no subject holds
 * needs that). Answers the subjects whose versions the caller may see.
 */
async function readableId(req: ApiRequest): Promise<ReadonlySet<string> | 'all'> {
  const holders = await subjectsHoldingId(req.params.id ?? '');
  const readable = await visible(req, holders, asSubject, 'READ');
  if (readable.length > 0) return readable.length === holders.length ? 'all' : new Set(readable);
  await requireAll(req, [{ operation: 'DESCRIBE', resourceType: 'CLUSTER', resourceName: CLUSTER_RESOURCE }]);
  return 'all';
}
const shownTo = (allowed: ReadonlySet<string> | 'all', subject: string) => allowed === 'all' || allowed.has(subject);

const field = (req: ApiRequest, name: string): unknown => {
  const b = body(req);
  return b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>)[name] : undefined;
};

export const schemaRegistryRoutes: Record<string, RouteHandler> = {
  'GET /subjects': async (req) => ok(await visible(req, await listSubjects(flag(req, 'deleted')), asSubject, 'READ')),
  'GET /subjects/{subject}/versions': async (req) => ok(await listVersions(subjectOf(req), flag(req, 'deleted'))),
  'POST /subjects/{subject}/versions': async (req) => {
    const input = await readableInput(req);
    const { id } = await register(subjectOf(req), input);
    return ok({ id });
  },
  'GET /subjects/{subject}/versions/{version}': async (req) => ok(await versionBody(await getVersion(subjectOf(req), req.params.version ?? '', flag(req, 'deleted')), formatOf(req))),
  'GET /subjects/{subject}/versions/{version}/schema': async (req) => raw(await getVersion(subjectOf(req), req.params.version ?? '', flag(req, 'deleted')), formatOf(req)),
  'DELETE /subjects/{subject}/versions/{version}': async (req) => ok(await deleteVersion(subjectOf(req), req.params.version ?? '', flag(req, 'permanent'))),
  'POST /subjects/{subject}': async (req) => ok(await versionBody(await lookup(subjectOf(req), await readableInput(req), flag(req, 'deleted')), formatOf(req))),
  'DELETE /subjects/{subject}': async (req) => ok(await deleteSubject(subjectOf(req), flag(req, 'permanent'))),
  'GET /schemas/ids/{id}': async (req) => {
    await readableId(req);
    const s = await schemaOfId(req.params.id ?? '');
    return ok({
      ...(s.schemaType !== 'AVRO' ? { schemaType: s.schemaType } : {}),
      ...(s.references.length > 0 ? { references: s.references } : {}),
      schema: await inFormat(s, formatOf(req)),
    });
  },
  'GET /schemas/ids/{id}/schema': async (req) => {
    await readableId(req);
    return raw(await schemaOfId(req.params.id ?? ''), formatOf(req));
  },
  'GET /schemas/ids/{id}/subjects': async (req) => {
    const allowed = await readableId(req);
    return ok((await subjectsOfId(req.params.id ?? '', flag(req, 'deleted'))).filter((s) => shownTo(allowed, s)));
  },
  'GET /schemas/ids/{id}/versions': async (req) => {
    const allowed = await readableId(req);
    return ok((await versionsOfId(req.params.id ?? '', flag(req, 'deleted'))).filter((v) => shownTo(allowed, v.subject)));
  },
  'GET /schemas/types': async () => ok([...SCHEMA_TYPES]),
  'GET /config': async () => ok({ compatibilityLevel: await globalLevel() }),
  'PUT /config': async (req) => ok({ compatibility: await setLevel(null, field(req, 'compatibility')) }),
  'DELETE /config': async () => ok({ compatibilityLevel: await deleteLevel(null) }),
  'GET /config/{subject}': async (req) => ok({ compatibilityLevel: await subjectLevel(subjectOf(req), flag(req, 'defaultToGlobal')) }),
  'PUT /config/{subject}': async (req) => ok({ compatibility: await setLevel(subjectOf(req), field(req, 'compatibility')) }),
  'DELETE /config/{subject}': async (req) => ok({ compatibilityLevel: await deleteLevel(subjectOf(req)) }),
  'GET /mode': async () => ok({ mode: await mode() }),
  'PUT /mode': async (req) => ok({ mode: await setMode(field(req, 'mode')) }),
  'POST /compatibility/subjects/{subject}/versions/{version}': async (req) => {
    const problems = await testCompatibility(subjectOf(req), req.params.version ?? '', await readableInput(req));
    return ok({ is_compatible: problems.length === 0, ...(flag(req, 'verbose') ? { messages: problems } : {}) });
  },
  'POST /compatibility/subjects/{subject}/versions': async (req) => {
    const problems = await testCompatibility(subjectOf(req), undefined, await readableInput(req));
    return ok({ is_compatible: problems.length === 0, ...(flag(req, 'verbose') ? { messages: problems } : {}) });
  },
};
