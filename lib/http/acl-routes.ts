/**
 * REST Proxy v3's ACL operations (Kafka's CreateAcls, DescribeAcls, DeleteAcls) in the spec's
 * shapes: `GET|POST|DELETE /v3/clusters/{c}/acls` and `POST .../acls:batch`. Bad input is
 * 400/40002 (INVALID_REQUEST) and stores nothing. Who may call these is checked by enforcement.
 */
import type { ClusterRecord } from '../storage/model.js';
import { createAcls, deleteAcls, describeAcls } from '../security/acl-admin.js';
import { validateFilter, type AclBinding, type AclInput } from '../security/acls.js';
import { badRequest, parseJson, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import { cluster, clusterUrl, list, ok } from './admin-routes.js';

const C = '/v3/clusters/{cluster_id}';

/** The JSON field of each binding field, in the spec's order. */
const FIELDS = [
  ['resourceType', 'resource_type'], ['resourceName', 'resource_name'], ['patternType', 'pattern_type'],
  ['principal', 'principal'], ['host', 'host'], ['operation', 'operation'], ['permission', 'permission'],
] as const;

const fromJson = (o: Readonly<Record<string, unknown>>): AclInput => Object.fromEntries(FIELDS.map(([k, j]) => [k, o[j]])) as AclInput;

function aclsUrl(req: ApiRequest, c: ClusterRecord, params: Readonly<Record<string, string>>): string {
  const q = new URLSearchParams(FIELDS.flatMap(([, j]) => (params[j] !== undefined ? [[j, params[j]] as [string, string]] : []))).toString();
  return `${clusterUrl(req, c)}/acls${q ? `?${q}` : ''}`;
}

/** Confluent's AclData: the binding, its cluster, and a `self` link that finds exactly it. */
function aclJson(req: ApiRequest, c: ClusterRecord, b: AclBinding) {
  const fields = Object.fromEntries(FIELDS.map(([k, j]) => [j, b[k]])) as Record<string, string>;
  return { kind: 'KafkaAcl', metadata: { self: aclsUrl(req, c, fields) }, cluster_id: c.clusterId, ...fields };
}

function objectBody(req: ApiRequest): Record<string, unknown> {
  const body = parseJson(req.body);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('The request body must be a JSON object.');
  return body as Record<string, unknown>;
}

const filterOf = (req: ApiRequest) => validateFilter(fromJson(req.query));

async function createOne(req: ApiRequest): Promise<ApiResponse> {
  await cluster(req);
  await createAcls([fromJson(objectBody(req))]);
  return { status: 201 };
}

async function createBatch(req: ApiRequest): Promise<ApiResponse> {
  await cluster(req);
  const data = objectBody(req).data;
  if (!Array.isArray(data)) throw badRequest("'data' must be an array of ACLs.");
  if (!data.every((d) => typeof d === 'object' && d !== null && !Array.isArray(d))) throw badRequest("Each entry of 'data' must be a JSON object.");
  await createAcls(data.map((d) => fromJson(d as Record<string, unknown>)));
  // Confluent's server answers 204 (CreateAclBatchAction); its OpenAPI document says 201.
  return { status: 204 };
}

export const aclRoutes: Record<string, RouteHandler> = {
  [`GET ${C}/acls`]: async (req) => {
    const c = await cluster(req);
    const found = await describeAcls(filterOf(req));
    return ok(list('KafkaAclList', aclsUrl(req, c, req.query), found.map((b) => aclJson(req, c, b))));
  },
  [`POST ${C}/acls`]: createOne,
  [`DELETE ${C}/acls`]: async (req) => {
    const c = await cluster(req);
    // The spec requires these four: a DELETE with none would match every ACL by accident.
    for (const p of ['resource_type', 'pattern_type', 'operation', 'permission']) {
      if (!req.query[p]) throw badRequest(`${p} cannot be unspecified: give it (ANY matches all).`);
    }
    const [deleted] = await deleteAcls([filterOf(req)]);
    return ok({ data: (deleted ?? []).map((b) => aclJson(req, c, b)) });
  },
  [`POST ${C}/acls:batch`]: createBatch,
};
