/**
 * Least privilege, from the catalog: each function's role gets the table access its entry names
 * (read, or read and write — on the coordination table only under the partition keys it names)
 * and bucket access only under its listed prefixes. Nothing else: the
 * replica tables' streams are granted by the replicator's event source mappings alone.
 */
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { COORDINATION_KEYS, type CoordinationKey } from '../lib/storage/tables.js';
import { type Access, type FunctionSpec } from '../lib/functions/catalog.js';

export function grantTable(table: ITable, grantee: IGrantable, access: Access): void {
  if (access === 'read') table.grantReadData(grantee);
  else if (access === 'write') table.grantReadWriteData(grantee);
}

/** The item writes of DynamoDB (transactions are authorized per item by these too). */
export const ITEM_WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'] as const;

/**
 * Reads of the whole table, writes only of items whose partition key matches one of `keys`
 * (`dynamodb:LeadingKeys`; every write request names its keys, and the `Null` check refuses a
 * request that names none). A TransactWriteItems is allowed item by item, so a transaction with
 * one item under another key is refused whole.
 */
export function grantTableWritesUnder(table: ITable, grantee: IGrantable, keys: readonly CoordinationKey[]): void {
  table.grantReadData(grantee);
  if (keys.length === 0) return;
  grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({
    actions: [...ITEM_WRITE_ACTIONS],
    resources: [table.tableArn],
    conditions: {
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': keys.map((k) => COORDINATION_KEYS[k]) },
      Null: { 'dynamodb:LeadingKeys': 'false' },
    },
  }));
}

/** The object ARN pattern for a prefix: `data/` → `arn:...:bucket/data/*`. */
const objectsUnder = (bucket: IBucket, prefix: string): string => bucket.arnForObjects(`${prefix}*`);

/**
 * Bucket access by prefix, tighter than `bucket.grantRead(fn, 'data/*')` (which also grants
 * `s3:List*` on the whole bucket and action wildcards):
 * - read: `s3:GetObject` on the prefix's objects;
 * - write: `s3:PutObject`, `s3:DeleteObject`, `s3:AbortMultipartUpload` on them;
 * - either: `s3:ListBucket` restricted by the `s3:prefix` condition to those prefixes (a missing
 *   object reads as 404 rather than 403, and deleting a prefix lists it first).
 */
export function grantBucketPrefixes(bucket: IBucket, grantee: IGrantable, read: readonly string[], write: readonly string[]): void {
  const statements: PolicyStatement[] = [];
  if (read.length > 0) {
    statements.push(new PolicyStatement({ actions: ['s3:GetObject'], resources: read.map((p) => objectsUnder(bucket, p)) }));
  }
  if (write.length > 0) {
    statements.push(new PolicyStatement({
      actions: ['s3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'], resources: write.map((p) => objectsUnder(bucket, p)),
    }));
  }
  const listed = [...new Set([...read, ...write])].sort();
  if (listed.length > 0) {
    statements.push(new PolicyStatement({
      actions: ['s3:ListBucket'], resources: [bucket.bucketArn], conditions: { StringLike: { 's3:prefix': listed.map((p) => `${p}*`) } },
    }));
  }
  for (const statement of statements) grantee.grantPrincipal.addToPrincipalPolicy(statement);
}

/** Everything a function of the catalog may touch. */
export function grantCatalogAccess(spec: FunctionSpec, grantee: IGrantable, storage: {
  readonly coordination: ITable; readonly replicas: readonly ITable[]; readonly bucket: IBucket;
}): void {
  if (spec.coordination === 'write' && spec.coordinationWrites !== 'any') grantTableWritesUnder(storage.coordination, grantee, spec.coordinationWrites);
  else grantTable(storage.coordination, grantee, spec.coordination);
  for (const t of storage.replicas) grantTable(t, grantee, spec.replicas);
  grantBucketPrefixes(storage.bucket, grantee, spec.bucketRead, spec.bucketWrite);
}
