/**
 * Client quotas per principal (Kafka's `kafka-configs --entity-type users --alter --add-config
 * producer_byte_rate=...`), REST Proxy v3 style: `GET|PUT|DELETE /client-quotas/{principal}`
 * and `GET /client-quotas`. The principal in the path is URL-encoded (`User%3Aalice`);
 * `<default>` (`%3Cdefault%3E`) is Kafka's default entity. Enforced by lib/security/quotas.ts.
 * Served by the admin function.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { clusterRecord } from '../cluster/metadata.js';
import { describeClientQuotas, removeClientQuota, setClientQuota, ClientQuotaMissing } from '../cluster/client-quotas.js';
import type { ClusterRecord } from '../storage/model.js';
import { badRequest, parseJson, type ApiRequest, type RouteHandler } from './api.js';

const Q = '/v3/clusters/{cluster_id}/client-quotas';

async function cluster(req: ApiRequest): Promise<ClusterRecord> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== c.clusterId) throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  return c;
}

const listUrl = (req: ApiRequest, c: ClusterRecord) => `${req.baseUrl}/v3/clusters/${c.clusterId}/client-quotas`;

/** A principal as Kafka writes one (`Type:name`, e.g. `User:alice`), or the default entity. */
const PRINCIPAL = /^(<default>|[A-Za-z][A-Za-z0-9_-]*:.+)$/s;
const MAX_PRINCIPAL_CHARS = 512;

function principalOf(req: ApiRequest): string {
  const p = req.params.principal ?? '';
  if (p.length > MAX_PRINCIPAL_CHARS || !PRINCIPAL.test(p)) {
    throw badRequest(`Invalid principal '${p.slice(0, 100)}': use Type:name (e.g. User:alice, URL-encoded as User%3Aalice) or <default>.`);
  }
  return p;
}

const notFound = (principal: string) => new HttpError(404, 40403, `No client quota is set for ${principal}.`);

/** The smallest rate: 0.001 (a request every ~17 minutes); far above DynamoDB's smallest number (1e-130). */
export const MIN_QUOTA_RATE = 0.001;
const rate = z.number().finite().min(MIN_QUOTA_RATE).max(Number.MAX_SAFE_INTEGER);
const quotaBody = z.object({ producer_byte_rate: rate.optional(), consumer_byte_rate: rate.optional(), request_rate: rate.optional() }).strict()
  .refine((b) => Object.keys(b).length > 0, 'give at least one of producer_byte_rate, consumer_byte_rate, request_rate');

/** The quota body; 400/40002 for anything else (Kafka answers a bad quota value with INVALID_REQUEST). */
function parseQuotaBody(body: string) {
  const out = quotaBody.safeParse(parseJson(body));
  if (!out.success) {
    const issue = out.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw badRequest(`Invalid client quota${where}: ${issue?.message ?? 'invalid'} (rates are numbers from ${MIN_QUOTA_RATE} to ${Number.MAX_SAFE_INTEGER}: bytes/s, or requests/s for request_rate).`);
  }
  return out.data;
}

function quotaJson(req: ApiRequest, c: ClusterRecord, q: { principal: string; producer_byte_rate?: number; consumer_byte_rate?: number; request_rate?: number }) {
  return {
    kind: 'KafkaClientQuota',
    metadata: { self: `${listUrl(req, c)}/${encodeURIComponent(q.principal)}`, resource_name: `crn:///kafka=${c.clusterId}/client-quota=${q.principal}` },
    cluster_id: c.clusterId,
    principal: q.principal,
    producer_byte_rate: q.producer_byte_rate ?? null,
    consumer_byte_rate: q.consumer_byte_rate ?? null,
    request_rate: q.request_rate ?? null,
  };
}

export const clientQuotaRoutes: Record<string, RouteHandler> = {
  [`GET ${Q}`]: async (req) => {
    const c = await cluster(req);
    const data = (await describeClientQuotas()).map((q) => quotaJson(req, c, q));
    return { status: 200, body: { kind: 'KafkaClientQuotaList', metadata: { self: listUrl(req, c), next: null }, data } };
  },
  [`GET ${Q}/{principal}`]: async (req) => {
    const c = await cluster(req);
    const principal = principalOf(req);
    const q = (await describeClientQuotas()).find((x) => x.principal === principal);
    if (!q) throw notFound(principal);
    return { status: 200, body: quotaJson(req, c, q) };
  },
  [`PUT ${Q}/{principal}`]: async (req) => {
    const c = await cluster(req);
    const principal = principalOf(req);
    const values = parseQuotaBody(req.body);
    await setClientQuota(principal, values);
    return { status: 200, body: quotaJson(req, c, { principal, ...values }) };
  },
  [`DELETE ${Q}/{principal}`]: async (req) => {
    await cluster(req);
    const principal = principalOf(req);
    try {
      await removeClientQuota(principal);
    } catch (err) {
      if (err instanceof ClientQuotaMissing) throw notFound(principal);
      throw err;
    }
    return { status: 204 };
  },
};
