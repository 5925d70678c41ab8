/**
 * The group commit's stage (docs/decisions/0012-staged-bytes-in-s3-express.md): an S3 Express One
 * Zone directory bucket in one Availability Zone. Writers put their batches in it under
 * `stage/<topic id>/<partition>/<leader epoch>/<stage id>`, a round lists, reads and deletes them,
 * and what a round commits goes to the cluster's bucket: nothing here outlives a day.
 */
import { Aws, CfnMapping, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3express from 'aws-cdk-lib/aws-s3express';
import type { Construct } from 'constructs';
import { createHash } from 'node:crypto';
import { STAGE_EXPIRATION_DAYS, STAGE_ROOT } from '../lib/storage/model.js';
import type { ResolvedProps } from './props.js';


/**
 * The stage's zone when `stageAvailabilityZoneId` is not given, per Region: the first zone S3
 * Express One Zone lists there (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-Endpoints.html).
 * A Region that is not here needs the prop; a deployment to one fails at the mapping's lookup.
 */
export const DEFAULT_STAGE_ZONES: Readonly<Record<string, string>> = {
  'us-east-1': 'use1-az4',
  'us-east-2': 'use2-az1',
  'us-west-2': 'usw2-az1',
  'ap-south-1': 'aps1-az1',
  'ap-northeast-1': 'apne1-az1',
  'eu-west-1': 'euw1-az1',
  'eu-north-1': 'eun1-az1',
};

/** A directory bucket's name is at most 63 characters, its `--<zone id>--x-s3` suffix included. */
const MAX_NAME = 63;
/** `-` and a 12-digit account id: directory bucket names are unique within a zone, across accounts. */
const ACCOUNT_PART = 13;
/** `-` and 8 hex digits of the table prefix's hash: prefixes that differ only in case or punctuation get different buckets. */
const HASH_PART = 9;

/**
 * The bucket's name, `<prefix>-<hash>-<account id>--<zone id>--x-s3`: the readable part is the
 * table prefix in the characters a bucket name allows (lowercase letters, digits, single hyphens),
 * cut to fit. `zoneId` may be a token (the Region's default zone); the name then leaves room for
 * the longest default.
 */
export function stageBucketName(tablePrefix: string, zoneId: string): string {
  const zoneLength = Token.isUnresolved(zoneId) ? Math.max(...Object.values(DEFAULT_STAGE_ZONES).map((z) => z.length)) : zoneId.length;
  const suffix = `--${zoneId}--x-s3`;
  const room = MAX_NAME - (zoneLength + '----x-s3'.length) - ACCOUNT_PART - HASH_PART;
  let readable = tablePrefix.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  // (names may not start with these: https://docs.aws.amazon.com/AmazonS3/latest/userguide/directory-bucket-naming-rules.html)
  if (readable === '' || /^(sthree-|amzn-s3-demo-)/.test(readable)) readable = `tributary-${readable}`.replace(/-+$/, '');
  readable = readable.slice(0, room).replace(/-+$/, '');
  const hash = createHash('sha256').update(tablePrefix).digest('hex').slice(0, 8);
  return `${readable}-${hash}-${Aws.ACCOUNT_ID}${suffix}`;
}

/** The stage's zone id: the prop, or the Region's default (a mapping when the Region is known only at deploy time). */
function stageZone(scope: Construct, p: Pick<ResolvedProps, 'stageAvailabilityZoneId'>): string {
  if (p.stageAvailabilityZoneId !== undefined) return p.stageAvailabilityZoneId;
  const region = Stack.of(scope).region;
  if (!Token.isUnresolved(region)) {
    const zone = DEFAULT_STAGE_ZONES[region];
    if (zone === undefined) throw new Error(`stageAvailabilityZoneId is needed in ${region}: no default zone for it (DEFAULT_STAGE_ZONES in cdk/stage-bucket.ts); give the AZ id of a zone where S3 Express One Zone runs`);
    return zone;
  }
  const mapping = new CfnMapping(scope, 'StageAvailabilityZone', {
    mapping: Object.fromEntries(Object.entries(DEFAULT_STAGE_ZONES).map(([r, zoneId]) => [r, { zoneId }])),
  });
  return mapping.findInMap(Aws.REGION, 'zoneId');
}

/**
 * The directory bucket: one zone, SSE-S3 (or SSE-KMS with the cluster's key, whose Bucket Keys a
 * directory bucket always uses), stage objects expired a day after they were written (S3 rounds
 * an expiry to the next midnight UTC) and incomplete uploads after a day, kept or deleted as
 * `removalPolicy` says. CloudFormation deletes only an empty directory bucket, and no custom
 * resource here empties one: with DESTROY, deleting the stack fails on it while it still holds
 * stage objects (a round deletes those it commits, the lifecycle rule the ones left behind).
 */
export function buildStageBucket(scope: Construct, p: ResolvedProps): s3express.CfnDirectoryBucket {
  const zoneId = stageZone(scope, p);
  const bucket = new s3express.CfnDirectoryBucket(scope, 'StageBucket', {
    bucketName: stageBucketName(p.tablePrefix, zoneId),
    locationName: zoneId,
    dataRedundancy: 'SingleAvailabilityZone',
    bucketEncryption: {
      serverSideEncryptionConfiguration: [p.encryptionKey
        ? { serverSideEncryptionByDefault: { sseAlgorithm: 'aws:kms', kmsMasterKeyId: p.encryptionKey.keyArn }, bucketKeyEnabled: true }
        : { serverSideEncryptionByDefault: { sseAlgorithm: 'AES256' } }],
    },
    lifecycleConfiguration: {
      rules: [
        { id: 'expire-stage', status: 'Enabled', prefix: STAGE_ROOT, expirationInDays: STAGE_EXPIRATION_DAYS },
        { id: 'abort-incomplete-multipart-uploads', status: 'Enabled', abortIncompleteMultipartUpload: { daysAfterInitiation: 1 } },
      ],
    },
  });
  bucket.applyRemovalPolicy(p.removalPolicy);
  return bucket;
}

/**
 * What a function that stages needs: `s3express:CreateSession` on the bucket, which is how every
 * request to a directory bucket is authorized (the SDK opens a ReadWrite session and signs
 * PutObject, ListObjectsV2, GetObject and DeleteObjects with it), and with SSE-KMS the key
 * (granted to every function that touches storage). A session is for the whole bucket: IAM cannot
 * narrow it to `stage/`, which is why the bucket holds nothing else.
 */
export function grantStage(bucket: s3express.CfnDirectoryBucket, grantee: iam.IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3express:CreateSession'], resources: [bucket.attrArn] }));
}
