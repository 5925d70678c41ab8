/**
 * REST Proxy v3 cluster configs (`/broker-configs`): the cluster-wide broker configs, Kafka's
 * `--entity-type brokers --entity-default`, in Confluent's KafkaClusterConfig shape; and each
 * broker's view of them (`/brokers/{id}/configs`, read-only: Tributary has no per-broker
 * overrides, so a broker's configs are the cluster-wide ones plus its fixed `broker.id` and
 * `broker.rack`). Served by the admin function beside lib/http/admin-routes.ts's routes.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import { alterClusterConfigs, describeClusterConfigs } from '../cluster/cluster-config-admin.js';
import { isClusterConfig, type ClusterConfigEntry } from '../cluster/cluster-configs.js';
import { clusterRecord } from '../cluster/metadata.js';
import { describeBrokers } from '../cluster/topics.js';
import type { BrokerRecord, ClusterRecord } from '../storage/model.js';
import { intPathParam, parseJson, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';

const noContent: ApiResponse = { status: 204 };

/** The cluster, or 404 when the path names another one (as every v3 route answers). */
async function cluster(req: ApiRequest): Promise<ClusterRecord> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== c.clusterId) throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  return c;
}

const configsUrl = (req: ApiRequest, c: ClusterRecord) => `${req.baseUrl}/v3/clusters/${c.clusterId}/broker-configs`;
const notFound = (name: string) => new HttpError(404, 404, `Config ${name} cannot be found.`);

/** Kafka's source of a cluster-wide value: set with `--entity-default`, or the built-in default. */
const SET = 'DYNAMIC_DEFAULT_BROKER_CONFIG';
const DEFAULT = 'DEFAULT_CONFIG';

function configJson(req: ApiRequest, c: ClusterRecord, e: ClusterConfigEntry) {
  return {
    kind: 'KafkaClusterConfig',
    metadata: { self: `${configsUrl(req, c)}/${e.name}`, resource_name: `crn:///kafka=${c.clusterId}/broker-config=${e.name}` },
    cluster_id: c.clusterId,
    config_type: 'BROKER',
    name: e.name,
    value: e.value,
    is_default: e.isDefault,
    is_read_only: false,
    is_sensitive: false,
    source: e.isDefault ? DEFAULT : SET,
    // Kafka's synonyms: every value in order of precedence, the one in force first.
    synonyms: [
      ...(e.isDefault ? [] : [{ name: e.name, value: e.value, source: SET }]),
      { name: e.name, value: e.default, source: DEFAULT },
    ],
  };
}

/** A broker's configs: the cluster-wide ones, and its id and rack (static, read-only). */
function brokerConfigsJson(req: ApiRequest, c: ClusterRecord, b: BrokerRecord, entries: readonly ClusterConfigEntry[]) {
  const self = `${req.baseUrl}/v3/clusters/${c.clusterId}/brokers/${b.brokerId}/configs`;
  const fixed = [{ name: 'broker.id', value: String(b.brokerId) }, { name: 'broker.rack', value: b.rack }];
  const one = (name: string, body: Record<string, unknown>) => ({
    kind: 'KafkaBrokerConfig',
    metadata: { self: `${self}/${name}`, resource_name: `crn:///kafka=${c.clusterId}/broker=${b.brokerId}/config=${name}` },
    cluster_id: c.clusterId,
    broker_id: b.brokerId,
    name,
    ...body,
  });
  return [
    ...fixed.map((f) => one(f.name, {
      value: f.value, is_default: false, is_read_only: true, is_sensitive: false, source: 'STATIC_BROKER_CONFIG',
      synonyms: [{ name: f.name, value: f.value, source: 'STATIC_BROKER_CONFIG' }],
    })),
    ...entries.map((e) => {
      const { kind: _kind, metadata: _metadata, config_type: _type, cluster_id: _cluster, name, ...rest } = configJson(req, c, e);
      return one(name, rest);
    }),
  ].sort((a, b) => a.name.localeCompare(b.name));
}

async function brokerOf(req: ApiRequest): Promise<BrokerRecord> {
  const notFound = () => new HttpError(404, 404, `Broker ${req.params.broker_id} cannot be found.`);
  const id = intPathParam(req, 'broker_id', notFound);
  const b = (await describeBrokers()).find((x) => x.brokerId === id);
  if (!b) throw notFound();
  return b;
}

const configValue = z.union([z.string(), z.number(), z.boolean()]);
const updateBody = z.object({ value: configValue }).strict();
const alterBody = z.object({
  data: z.array(z.object({
    name: z.string(),
    value: configValue.nullable().optional(),
    operation: z.enum(['SET', 'DELETE', 'set', 'delete']).optional(),
  }).strict()),
  validate_only: z.boolean().optional(),
}).strict();

const B = '/v3/clusters/{cluster_id}/broker-configs';
const BR = '/v3/clusters/{cluster_id}/brokers';

export const clusterConfigRoutes: Record<string, RouteHandler> = {
  [`GET ${B}`]: async (req) => {
    const c = await cluster(req);
    const data = (await describeClusterConfigs()).map((e) => configJson(req, c, e));
    return { status: 200, body: { kind: 'KafkaClusterConfigList', metadata: { self: configsUrl(req, c), next: null }, data } };
  },
  [`GET ${B}/{name}`]: async (req) => {
    const c = await cluster(req);
    const name = req.params.name ?? '';
    const e = isClusterConfig(name) ? (await describeClusterConfigs()).find((x) => x.name === name) : undefined;
    if (!e) throw notFound(name);
    return { status: 200, body: configJson(req, c, e) };
  },
  [`PUT ${B}/{name}`]: async (req) => {
    await cluster(req);
    const body = validate(updateBody, parseJson(req.body), 'config');
    await alterClusterConfigs([{ name: req.params.name ?? '', value: body.value }]);
    return noContent;
  },
  [`DELETE ${B}/{name}`]: async (req) => {
    await cluster(req);
    const name = req.params.name ?? '';
    if (!isClusterConfig(name)) throw notFound(name);
    await alterClusterConfigs([{ name, value: null }]);
    return noContent;
  },
  [`POST ${B}:alter`]: async (req) => {
    await cluster(req);
    const body = validate(alterBody, parseJson(req.body), 'config alteration');
    // Kafka's SET needs a value: a SET without one is refused, not taken for a DELETE.
    const missing = body.data.find((d) => d.operation?.toUpperCase() !== 'DELETE' && (d.value === undefined || d.value === null));
    if (missing) throw new KafkaError('INVALID_CONFIG', `Null value not supported for broker config ${missing.name}; use operation DELETE to reset it.`);
    const changes = body.data.map((d) => ({ name: d.name, value: d.operation?.toUpperCase() === 'DELETE' ? null : d.value }));
    await alterClusterConfigs(changes, { validateOnly: body.validate_only ?? false });
    return noContent;
  },
  [`GET ${BR}/-/configs`]: async (req) => {
    const c = await cluster(req);
    const [brokers, entries] = await Promise.all([describeBrokers(), describeClusterConfigs()]);
    const data = brokers.flatMap((b) => brokerConfigsJson(req, c, b, entries));
    return { status: 200, body: { kind: 'KafkaBrokerConfigList', metadata: { self: `${req.baseUrl}${BR.replace('{cluster_id}', c.clusterId)}/-/configs`, next: null }, data } };
  },
  [`GET ${BR}/{broker_id}/configs`]: async (req) => {
    const c = await cluster(req);
    const b = await brokerOf(req);
    const data = brokerConfigsJson(req, c, b, await describeClusterConfigs());
    return { status: 200, body: { kind: 'KafkaBrokerConfigList', metadata: { self: `${req.baseUrl}${BR.replace('{cluster_id}', c.clusterId)}/${b.brokerId}/configs`, next: null }, data } };
  },
  [`GET ${BR}/{broker_id}/configs/{name}`]: async (req) => {
    const c = await cluster(req);
    const b = await brokerOf(req);
    const e = brokerConfigsJson(req, c, b, await describeClusterConfigs()).find((x) => x.name === req.params.name);
    if (!e) throw notFound(req.params.name ?? '');
    return { status: 200, body: e };
  },
};
