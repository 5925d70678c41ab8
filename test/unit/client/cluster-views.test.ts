/**
 * The console's views read tolerantly (lib/client/cluster-views.ts): a partition without a leader,
 * a leader given as a link, fields a server leaves out or sends with another type, and the next
 * page's offset of a segment list.
 */
import { describe, expect, it } from 'vitest';
import { clusterMetadata, controllerDescription, nextFromOffset, partitionDescription, segmentDescription, tierBounds } from '../../../client/cluster-views.js';

describe('Function: partitionDescription', () => {
  it('gives -1 for a partition without a leader, reads a leader link, and names the replicas from their states when `replicas` is a link', () => {
    const states = [{ broker_id: 2, is_leader: false, is_in_sync: true, state: 'in-sync', log_start_offset: 0, log_end_offset: 4, lag: 1 },
      { broker_id: 3, state: 'unavailable', log_start_offset: null, log_end_offset: null, lag: null }];
    const p = partitionDescription({ partition_id: 1, leader_id: null, leader_epoch: 4, isr: [2], replicas: { related: 'x/replicas' }, replica_states: states, high_watermark: 3 });
    expect(p).toEqual({
      partitionId: 1, leader: -1, leaderEpoch: 4, isr: [2], replicas: [2, 3], logStartOffset: null, logEndOffset: null, highWatermark: 3, lastStableOffset: null,
      replicaStates: [
        { brokerId: 2, isLeader: false, isInSync: true, state: 'in-sync', logStartOffset: 0, logEndOffset: 4, lag: 1 },
        { brokerId: 3, isLeader: false, isInSync: false, state: 'unavailable', logStartOffset: null, logEndOffset: null, lag: null },
      ],
    });
    expect(partitionDescription({ partition_id: 0, leader: { related: 'http://h/v3/clusters/c/brokers/7' } }).leader).toBe(7);
    expect(partitionDescription({ partition_id: 0, leader: 5, replicas: [{ broker_id: 5 }, 6] })).toMatchObject({ leader: 5, replicas: [5, 6], replicaStates: [], isr: [] });
  });
});

describe('Function: clusterMetadata and controllerDescription', () => {
  it('reads the metadata view, with a null controller while nobody holds the lease', () => {
    const m = clusterMetadata({
      cluster_id: 'c1', metadata_version: 9, controller: null, brokers: [{ broker_id: 1, rack: null, state: 'alive' }],
      topics: [{ topic_name: 't', topic_id: 'id', partitions: [{ partition_id: 0, leader_id: null, leader_epoch: 2, replicas: [1], isr: [] }] }],
    }, 'fallback');
    expect(m).toEqual({
      clusterId: 'c1', metadataVersion: 9, controller: null, brokers: [{ brokerId: 1, rack: null, state: 'alive' }],
      topics: [{ name: 't', topicId: 'id', partitions: [{ partitionId: 0, leader: -1, leaderEpoch: 2, replicas: [1], isr: [] }] }],
    });
    expect(clusterMetadata({ controller: { controller_id: 'controller-1', epoch: 3, lease_expires_at: 'z' } }, 'fallback'))
      .toMatchObject({ clusterId: 'fallback', metadataVersion: null, controller: { controllerId: 'controller-1', epoch: 3, leaseExpiresAt: 'z' }, brokers: [], topics: [] });
    expect(controllerDescription({ controller_id: null, epoch: null, lease_expires_at: null })).toEqual({ controllerId: null, epoch: null, leaseExpiresAt: null });
    expect(controllerDescription('nonsense')).toEqual({ controllerId: null, epoch: null, leaseExpiresAt: null });
  });
});

describe('Function: segmentDescription, tierBounds and nextFromOffset', () => {
  it('reads a pending segment\'s missing details as null, the tiers\' bounds, and the next page\'s from_offset', () => {
    expect(segmentDescription({ topic_name: 't', partition_id: 0, base_offset: 10, end_offset: 20, state: 'pending', object_key: 'k', created_at: 'c' })).toEqual({
      topic: 't', partition: 0, baseOffset: 10, endOffset: 20, sizeBytes: null, recordCount: null, batchCount: null, minTimestamp: null, maxTimestamp: null,
      state: 'pending', generation: 0, objectKey: 'k', createdAt: 'c', deletedAt: null,
    });
    expect(tierBounds({ log_start_offset: 0, local_log_start_offset: 'x' })).toEqual({ logStartOffset: 0, localLogStartOffset: null, highWatermark: null, logEndOffset: null });
    expect(nextFromOffset({ metadata: { next: 'http://h/v3/clusters/c/topics/t/partitions/0/segments?state=all&from_offset=1200' } })).toBe(1200);
    expect(nextFromOffset({ metadata: { next: null } })).toBeNull();
    expect(nextFromOffset({})).toBeNull();
  });
});
