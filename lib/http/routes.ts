/**
 * Every HTTP route, which function serves it, and what the caller needs (Kafka's ACL operation
 * per API, lib/http/access.ts) — the one list the CDK's API, the local gateway and the
 * authorization in `httpFunction` are built from. Paths use API Gateway's syntax; `$default`
 * catches the rest.
 *
 * Access follows Kafka's mapping: Produce → TOPIC WRITE (idempotent produce needs no more, as in
 * Kafka ≥ 3); InitProducerId → WRITE on any topic or CLUSTER IDEMPOTENT_WRITE; Fetch → TOPIC READ;
 * ListOffsets, Metadata, describe → TOPIC DESCRIBE; CreateTopics → CLUSTER CREATE or TOPIC CREATE;
 * DeleteTopics, DeleteRecords → TOPIC DELETE; CreatePartitions → TOPIC ALTER; Describe/AlterConfigs
 * → DESCRIBE_CONFIGS/ALTER_CONFIGS on the TOPIC or the CLUSTER (broker configs); group heartbeat,
 * commit, reset and every v2 consumer-instance call → GROUP READ; describe, offsets, lags → GROUP
 * DESCRIBE; DeleteGroups → GROUP DELETE; brokers, controller, balancer, reassignments (reads) →
 * CLUSTER DESCRIBE; broker add/remove, reassignments, elect-leader → CLUSTER ALTER.
 *
 * The checks that depend on a body (`inBody`), made where the handler parses it:
 * - `POST /v3/clusters/{c}/topics`: CLUSTER CREATE or TOPIC CREATE on `topic_name` (admin-routes.ts);
 * - `POST .../consumer-groups/{g}/offsets:commit`: TOPIC READ per committed topic (group-routes.ts);
 * - `POST .../consumer-groups/{g}/offsets:reset`: TOPIC READ per topic reset (group-routes.ts);
 * - `POST .../consumer-groups/{g}/heartbeat`: TOPIC DESCRIBE per subscribed topic name; a regex
 *   covers only the topics the member may DESCRIBE (group-routes.ts, lib/groups/coordinator.ts);
 * - v2 `POST .../subscription`, `.../assignments`, `.../offsets`, `.../positions[/beginning|/end]`:
 *   TOPIC READ per named topic; a `topic_pattern` covers only the topics the principal may READ
 *   (consumer-routes.ts);
 * - v2 `GET .../records`: TOPIC READ on every topic the instance reads, at each read (consumer-routes.ts,
 *   lib/groups/rest-consumer.ts);
 * - a produce with `transactional_id`: TRANSACTIONAL_ID WRITE on it (produce-routes.ts);
 * - `POST .../transactions/{id}/partitions` (Kafka's AddPartitionsToTxn): TOPIC WRITE per
 *   partition's topic; `POST .../transactions/{id}/offsets` (AddOffsetsToTxn, TxnOffsetCommit):
 *   GROUP READ on the group and TOPIC READ per offset's topic (transaction-routes.ts). A forced abort (Kafka's WriteTxnMarkers from kafka-transactions.sh) is CLUSTER ALTER,
 *   and so is ending a partition's hanging transactions; a partition's producers (DescribeProducers) are TOPIC READ.
 * - push subscriptions (push-subscription-routes.ts): READ on some topic before anything (a
 *   principal that can read nothing is refused at once); then creating one, TOPIC READ on its
 *   topic, GROUP READ on its group, TOPIC WRITE on its dead-letter topic; describing or deleting
 *   one, GROUP DESCRIBE or DELETE on its group.
 * - the schema registry (schema-registry-routes.ts): registering (`/versions`), looking up
 *   (`/subjects/{subject}`) and testing compatibility (`/compatibility/...`) a schema with
 *   references, SUBJECT READ on each reference's subject; a schema by id (`/schemas/ids/{id}`,
 *   its `/schema`, `/subjects`, `/versions`), SUBJECT READ on a subject holding it, or else
 *   CLUSTER DESCRIBE; its subjects and versions list the subjects the principal may READ.
 * Lists (`filtered`) show only what the principal may DESCRIBE (the registry's subjects: READ): v3 and v2 topic lists, the
 * metadata route's topics, all topics' configs (DESCRIBE_CONFIGS), the consumer-group list.
 */
import { anyOf, anyTopic, cluster, filtered, group, inBody, open, subject, topic, transactionalId, type AccessRule } from './access.js';

import type { ApiFunctionName } from '../functions/catalog.js';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteSpec {
  readonly method: Method;
  readonly path: string;
  readonly fn: ApiFunctionName;
  /** What the caller needs, checked before the handler runs (lib/http/access.ts). */
  readonly access: AccessRule;
}

const r = (method: Method, path: string, fn: ApiFunctionName, access: AccessRule): RouteSpec => ({ method, path, fn, access });
const C = '/v3/clusters/{cluster_id}';
const T = `${C}/topics/{topic_name}`;
const P = `${T}/partitions/{partition_id}`;
const G = `${C}/consumer-groups/{group_id}`;
const I = '/consumers/{group_name}/instances/{instance}';
const X = `${C}/transactions/{transactional_id}`;
const S = '/subjects/{subject}';
/** A schema by id: READ on a subject that holds it (deleted versions too), or CLUSTER DESCRIBE. */
const ID_ACCESS = 'SUBJECT READ on a subject holding the id, or else CLUSTER DESCRIBE';

export const ROUTES: readonly RouteSpec[] = [
  r('GET', '/v3/clusters', 'admin', open('the cluster id, as Kafka\'s Metadata answers it to any client')),
  r('GET', C, 'admin', open('the cluster id and links, as Kafka\'s Metadata answers them')),
  r('GET', `${C}/controller`, 'admin', cluster('DESCRIBE')),
  r('GET', `${C}/brokers`, 'admin', cluster('DESCRIBE')),
  r('GET', `${C}/metadata`, 'admin', filtered('topics the principal may DESCRIBE (brokers and controller to all, as Kafka\'s Metadata)')),
  r('GET', `${C}/brokers/{broker_id}`, 'admin', cluster('DESCRIBE')),
  r('GET', `${C}/brokers/-/configs`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('GET', `${C}/brokers/{broker_id}/configs`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('GET', `${C}/brokers/{broker_id}/configs/{name}`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('GET', `${C}/brokers/{broker_id}/partition-replicas`, 'admin', cluster('DESCRIBE')),
  r('GET', `${C}/broker-configs`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('POST', `${C}/broker-configs:alter`, 'admin', cluster('ALTER_CONFIGS')),
  r('GET', `${C}/broker-configs/{name}`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('PUT', `${C}/broker-configs/{name}`, 'admin', cluster('ALTER_CONFIGS')),
  r('DELETE', `${C}/broker-configs/{name}`, 'admin', cluster('ALTER_CONFIGS')),
  r('GET', `${C}/acls`, 'admin', cluster('DESCRIBE')),
  r('POST', `${C}/acls`, 'admin', cluster('ALTER')),
  r('DELETE', `${C}/acls`, 'admin', cluster('ALTER')),
  r('POST', `${C}/acls:batch`, 'admin', cluster('ALTER')),
  r('GET', `${C}/client-quotas`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('GET', `${C}/client-quotas/{principal}`, 'admin', cluster('DESCRIBE_CONFIGS')),
  r('PUT', `${C}/client-quotas/{principal}`, 'admin', cluster('ALTER_CONFIGS')),
  r('DELETE', `${C}/client-quotas/{principal}`, 'admin', cluster('ALTER_CONFIGS')),
  r('GET', `${C}/topics`, 'admin', filtered('topics the principal may DESCRIBE')),
  r('POST', `${C}/topics`, 'admin', inBody('CLUSTER CREATE or TOPIC CREATE on topic_name', open('checked where the body names the topic'))),
  r('GET', T, 'admin', topic('DESCRIBE')),
  r('DELETE', T, 'admin', topic('DELETE')),
  r('PATCH', T, 'admin', topic('ALTER')),
  r('GET', `${T}/partitions`, 'admin', topic('DESCRIBE')),
  r('GET', P, 'admin', topic('DESCRIBE')),
  r('GET', `${P}/replicas`, 'admin', topic('DESCRIBE')),
  r('GET', `${P}/replicas/{broker_id}`, 'admin', topic('DESCRIBE')),
  r('GET', `${P}/segments`, 'admin', topic('DESCRIBE')),
  r('POST', `${P}/records:delete`, 'admin', topic('DELETE')),
  r('GET', `${C}/topics/-/configs`, 'admin', filtered('configs of topics the principal may DESCRIBE_CONFIGS')),
  r('GET', `${T}/configs`, 'admin', topic('DESCRIBE_CONFIGS')),
  r('POST', `${T}/configs:alter`, 'admin', topic('ALTER_CONFIGS')),
  r('GET', `${T}/configs/{name}`, 'admin', topic('DESCRIBE_CONFIGS')),
  r('PUT', `${T}/configs/{name}`, 'admin', topic('ALTER_CONFIGS')),
  r('DELETE', `${T}/configs/{name}`, 'admin', topic('ALTER_CONFIGS')),
  r('POST', `${C}/brokers`, 'admin', cluster('ALTER')),
  r('DELETE', `${C}/brokers/{broker_id}`, 'admin', cluster('ALTER')),
  r('GET', `${C}/balancer`, 'admin', cluster('DESCRIBE')),
  r('GET', `${C}/topics/-/partitions/-/reassignment`, 'admin', cluster('DESCRIBE')),
  r('GET', `${T}/partitions/-/reassignment`, 'admin', cluster('DESCRIBE')),
  r('GET', `${P}/reassignment`, 'admin', cluster('DESCRIBE')),
  r('PATCH', `${P}/reassignment`, 'admin', cluster('ALTER')),
  r('DELETE', `${P}/reassignment`, 'admin', cluster('ALTER')),
  r('POST', P, 'admin', cluster('ALTER')),
  r('POST', `${T}/records`, 'produce', topic('WRITE')),
  r('POST', `${T}/records:batch`, 'produce', topic('WRITE')),
  r('POST', `${C}/producers`, 'produce', anyOf(anyTopic('WRITE'), cluster('IDEMPOTENT_WRITE'))),
  r('GET', `${C}/transactions`, 'produce', filtered('transactional ids the principal may DESCRIBE')),
  r('GET', X, 'produce', transactionalId('DESCRIBE')),
  r('POST', `${X}/producer`, 'produce', transactionalId('WRITE')),
  r('POST', `${X}/partitions`, 'produce', inBody('TOPIC WRITE on each partition\'s topic', transactionalId('WRITE'))),
  r('POST', `${X}/offsets`, 'produce', inBody('GROUP READ on group_id, TOPIC READ on each offset\'s topic', transactionalId('WRITE'))),
  r('POST', `${X}/end`, 'produce', transactionalId('WRITE')),
  r('POST', `${X}/abort`, 'produce', cluster('ALTER')),
  r('GET', `${P}/producers`, 'produce', topic('READ')),
  r('POST', `${P}/hanging-transactions:end`, 'produce', cluster('ALTER')),
  r('GET', `${P}/records`, 'fetch', topic('READ')),
  r('GET', `${P}/offsets`, 'fetch', topic('DESCRIBE')),
  r('GET', `${P}/offset`, 'fetch', topic('DESCRIBE')),
  r('POST', `${C}/subscriptions`, 'groups', inBody('TOPIC READ on topic_name, GROUP READ on group_id, TOPIC WRITE on dead_letter_topic', anyTopic('READ'))),
  r('GET', `${C}/subscriptions`, 'groups', filtered('push subscriptions whose group the principal may DESCRIBE')),
  r('GET', `${C}/subscriptions/{subscription_name}`, 'groups', inBody('GROUP DESCRIBE on the subscription\'s group', anyTopic('READ'))),
  r('DELETE', `${C}/subscriptions/{subscription_name}`, 'groups', inBody('GROUP DELETE on the subscription\'s group', anyTopic('READ'))),
  r('GET', `${C}/consumer-groups`, 'groups', filtered('groups the principal may DESCRIBE')),
  r('GET', `${G}`, 'groups', group('DESCRIBE')),
  r('DELETE', `${G}`, 'groups', group('DELETE')),
  r('GET', `${G}/consumers`, 'groups', group('DESCRIBE')),
  r('GET', `${G}/consumers/{consumer_id}`, 'groups', group('DESCRIBE')),
  r('GET', `${G}/consumers/{consumer_id}/assignments`, 'groups', group('DESCRIBE')),
  r('GET', `${G}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}`, 'groups', group('DESCRIBE')),
  r('GET', `${G}/lags`, 'groups', group('DESCRIBE')),
  r('GET', `${G}/lags/{topic_name}/partitions/{partition_id}`, 'groups', group('DESCRIBE')),
  r('GET', `${G}/lag-summary`, 'groups', group('DESCRIBE')),
  r('POST', `${G}/heartbeat`, 'groups', inBody('TOPIC DESCRIBE on each subscribed_topic_names topic; a subscribed_topic_regex covers only topics the member may DESCRIBE', group('READ'))),
  r('POST', `${G}/offsets:commit`, 'groups', inBody('TOPIC READ on each committed partition\'s topic', group('READ'))),
  r('GET', `${G}/offsets`, 'groups', group('DESCRIBE')),
  r('POST', `${G}/offsets:reset`, 'groups', inBody('TOPIC READ on each topic reset', group('READ'))),
  r('POST', '/consumers/{group_name}', 'groups', group('READ')),
  r('DELETE', `${I}`, 'groups', group('READ')),
  r('POST', `${I}/subscription`, 'groups', inBody('TOPIC READ on each subscribed topic; a topic_pattern covers only topics the principal may READ', group('READ'))),
  r('GET', `${I}/subscription`, 'groups', group('READ')),
  r('DELETE', `${I}/subscription`, 'groups', group('READ')),
  r('POST', `${I}/assignments`, 'groups', inBody('TOPIC READ on each assigned partition\'s topic', group('READ'))),
  r('GET', `${I}/assignments`, 'groups', group('READ')),
  r('GET', `${I}/records`, 'groups', inBody('TOPIC READ on each topic of the assignment it reads, at each read', group('READ'))),
  r('POST', `${I}/offsets`, 'groups', inBody('TOPIC READ on each committed partition\'s topic', group('READ'))),
  r('GET', `${I}/offsets`, 'groups', group('DESCRIBE')),
  r('POST', `${I}/positions`, 'groups', inBody('TOPIC READ on each partition sought', group('READ'))),
  r('POST', `${I}/positions/beginning`, 'groups', inBody('TOPIC READ on each partition sought', group('READ'))),
  r('POST', `${I}/positions/end`, 'groups', inBody('TOPIC READ on each partition sought', group('READ'))),
  r('GET', '/topics', 'admin', filtered('topics the principal may DESCRIBE')),
  r('GET', '/topics/{topic_name}', 'admin', topic('DESCRIBE')),
  r('GET', '/topics/{topic_name}/partitions', 'admin', topic('DESCRIBE')),
  r('GET', '/topics/{topic_name}/partitions/{partition_id}', 'admin', topic('DESCRIBE')),
  r('GET', '/brokers', 'admin', cluster('DESCRIBE')),
  r('POST', '/topics/{topic_name}', 'produce', topic('WRITE')),
  r('POST', '/topics/{topic_name}/partitions/{partition_id}', 'produce', topic('WRITE')),
  r('GET', '/topics/{topic_name}/partitions/{partition_id}/records', 'fetch', topic('READ')),
  r('GET', '/topics/{topic_name}/partitions/{partition_id}/offsets', 'fetch', topic('DESCRIBE')),
  // Confluent Schema Registry's API (schema-registry-routes.ts, docs/schema-registry.md).
  r('GET', '/subjects', 'admin', filtered('subjects the principal may READ')),
  r('GET', `${S}/versions`, 'admin', subject('READ')),
  r('POST', `${S}/versions`, 'admin', inBody('SUBJECT READ on each reference\'s subject', subject('WRITE'))),
  r('GET', `${S}/versions/{version}`, 'admin', subject('READ')),
  r('GET', `${S}/versions/{version}/schema`, 'admin', subject('READ')),
  r('DELETE', `${S}/versions/{version}`, 'admin', subject('DELETE')),
  r('POST', S, 'admin', inBody('SUBJECT READ on each reference\'s subject', subject('READ'))),
  r('DELETE', S, 'admin', subject('DELETE')),
  r('GET', '/schemas/ids/{id}', 'admin', inBody(ID_ACCESS, open('checked where the id\'s subjects are known'))),
  r('GET', '/schemas/ids/{id}/schema', 'admin', inBody(ID_ACCESS, open('checked where the id\'s subjects are known'))),
  r('GET', '/schemas/ids/{id}/subjects', 'admin', inBody(`${ID_ACCESS}; lists the subjects the principal may READ`, open('checked where the id\'s subjects are known'))),
  r('GET', '/schemas/ids/{id}/versions', 'admin', inBody(`${ID_ACCESS}; lists the versions of subjects the principal may READ`, open('checked where the id\'s subjects are known'))),
  r('GET', '/schemas/types', 'admin', open('the schema types the registry takes, the same for every caller')),
  r('GET', '/config', 'admin', cluster('DESCRIBE_CONFIGS')),
  r('PUT', '/config', 'admin', cluster('ALTER_CONFIGS')),
  r('DELETE', '/config', 'admin', cluster('ALTER_CONFIGS')),
  r('GET', '/config/{subject}', 'admin', subject('DESCRIBE_CONFIGS')),
  r('PUT', '/config/{subject}', 'admin', subject('ALTER_CONFIGS')),
  r('DELETE', '/config/{subject}', 'admin', subject('ALTER_CONFIGS')),
  r('GET', '/mode', 'admin', cluster('DESCRIBE_CONFIGS')),
  r('PUT', '/mode', 'admin', cluster('ALTER_CONFIGS')),
  r('POST', '/compatibility/subjects/{subject}/versions/{version}', 'admin', inBody('SUBJECT READ on each reference\'s subject', subject('READ'))),
  r('POST', '/compatibility/subjects/{subject}/versions', 'admin', inBody('SUBJECT READ on each reference\'s subject', subject('READ'))),
];

/** The catch-all route (API Gateway's `$default`): a Kafka-style 404. */
export const DEFAULT_ROUTE: RouteSpec = { method: 'GET', path: '$default', fn: 'admin', access: open('it only answers 404') };

export const routeKey = (route: RouteSpec): string => (route.path === '$default' ? '$default' : `${route.method} ${route.path}`);

export interface RouteMatch {
  readonly route: RouteSpec;
  readonly pathParameters: Record<string, string>;
}

const segmentsOf = (path: string): string[] => path.split('/').filter((s) => s !== '');

/**
 * Matches a request to a route as API Gateway does: literal segments beat variables, then the
 * route with more literal segments wins. Path parameters come back URL-decoded.
 */
export function matchRoute(method: string, path: string, routes: readonly RouteSpec[] = ROUTES): RouteMatch | undefined {
  const parts = segmentsOf(path);
  let best: { match: RouteMatch; score: number[] } | undefined;
  for (const route of routes) {
    if (route.method !== method) continue;
    const pattern = segmentsOf(route.path);
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const score: number[] = [];
    let ok = true;
    for (let i = 0; i < pattern.length && ok; i++) {
      const seg = pattern[i] as string;
      const part = parts[i] as string;
      const variable = /^\{(\w+)\}$/.exec(seg);
      if (variable) {
        try {
          params[variable[1] as string] = decodeURIComponent(part);
        } catch {
          ok = false;
        }
        score.push(0);
      } else {
        ok = seg === part;
        score.push(1);
      }
    }
    if (!ok) continue;
    const better = !best || score.join('') > best.score.join('');
    if (better) best = { match: { route, pathParameters: params }, score };
  }
  return best?.match;
}
