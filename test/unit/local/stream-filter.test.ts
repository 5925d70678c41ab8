/**
 * The replicator's stream filter (REPLICA_STREAM_PATTERN), as the local poller applies it and as
 * the CDK hands it to Lambda: the log's inserts and changes invoke the replicator; deletions and the
 * group commit's stage (its items carry `stage`) do not.
 */
import { describe, expect, it } from 'vitest';
import { REPLICA_STREAM_PATTERN } from '../../../lib/functions/catalog.js';
import { matchesPattern } from '../../../local/stream-poller.js';

const record = (eventName: string, off: number, image: Record<string, unknown>) => ({
  eventName,
  dynamodb: { Keys: { tp: { S: 't#0' }, off: { N: String(off) } }, ...(eventName === 'REMOVE' ? {} : { NewImage: { tp: { S: 't#0' }, off: { N: String(off) }, ...image } }) },
});

describe('REPLICA_STREAM_PATTERN', () => {
  it('passes a batch insert and a head change, and neither a deletion nor a staged item nor the committer lease', () => {
    expect(matchesPattern(REPLICA_STREAM_PATTERN, record('INSERT', 4, { baseOffset: { N: '4' } }))).toBe(true);
    expect(matchesPattern(REPLICA_STREAM_PATTERN, record('MODIFY', -1, { leo: { N: '5' } }))).toBe(true);
    expect(matchesPattern(REPLICA_STREAM_PATTERN, record('REMOVE', 4, {}))).toBe(false);
    expect(matchesPattern(REPLICA_STREAM_PATTERN, record('INSERT', -2_700_000_000_000_000, { stage: { S: 'staged' } }))).toBe(false);
    expect(matchesPattern(REPLICA_STREAM_PATTERN, record('MODIFY', -2_700_000_000_000_000, { stage: { S: 'committed' } }))).toBe(false);
    expect(matchesPattern(REPLICA_STREAM_PATTERN, record('INSERT', -2, { stage: { S: 'lease' } }))).toBe(false);
  });
});
