import { describe, expect, it } from 'vitest';
import {
  applyClusterConfigChanges, checkClusterConfig, clusterConfigEntries, effectiveClusterConfigs, isClusterConfig,
} from '../../../lib/cluster/cluster-configs.js';

describe('Function: checkClusterConfig', () => {
  it.each([
    ['auto.leader.rebalance.enable', false, 'false'],
    ['leader.imbalance.per.broker.percentage', '0', '0'],
    ['leader.imbalance.per.broker.percentage', 100, '100'],
    ['leader.imbalance.check.interval.seconds', ' 1 ', '1'],
    ['leader.replication.throttled.rate', '1', '1'],
    ['follower.replication.throttled.rate', '9223372036854775807', '9223372036854775807'],
    ['tributary.balancer.enable', 'true', 'true'],
    ['tributary.log.format.version', '2', '2'],
  ])('accepts %s=%j and stores it as %j', (name, value, stored) => {
    expect(checkClusterConfig(name, value)).toBe(stored);
  });

  it.each([
    ['no.such.config', '1', /Unknown broker config name: no.such.config/],
    ['retention.ms', '1000', /Unknown broker config name: retention.ms/],
    ['auto.leader.rebalance.enable', 'yes', /Invalid value yes for configuration auto.leader.rebalance.enable: must be true or false/],
    ['leader.imbalance.per.broker.percentage', '101', /Invalid value 101 .*must be an integer in \[0, 100\]/],
    ['leader.imbalance.per.broker.percentage', '-1', /leader.imbalance.per.broker.percentage/],
    ['leader.imbalance.per.broker.percentage', '1.5', /leader.imbalance.per.broker.percentage/],
    ['leader.imbalance.check.interval.seconds', '0', /Invalid value 0 .*must be an integer ≥ 1/],
    ['leader.replication.throttled.rate', '0', /leader.replication.throttled.rate/],
    ['follower.replication.throttled.rate', '10MB', /follower.replication.throttled.rate/],
    ['tributary.balancer.enable', '', /tributary.balancer.enable/],
    ['tributary.log.format.version', '3', /tributary.log.format.version/],
  ])('rejects %s=%j with INVALID_CONFIG', (name, value, message) => {
    expect(() => checkClusterConfig(name, value)).toThrow(expect.objectContaining({ kafkaName: 'INVALID_CONFIG', message: expect.stringMatching(message) }));
  });

  it('rejects a value that is not a string, number or boolean', () => {
    expect(() => checkClusterConfig('tributary.balancer.enable', { on: true })).toThrow(expect.objectContaining({ kafkaName: 'INVALID_CONFIG' }));
  });
});

describe('Function: applyClusterConfigChanges', () => {
  it('sets and resets, leaving what the changes do not name', () => {
    const set = { 'auto.leader.rebalance.enable': 'false', 'leader.imbalance.per.broker.percentage': '20' };
    expect(applyClusterConfigChanges(set, [
      { name: 'auto.leader.rebalance.enable', value: null },
      { name: 'leader.replication.throttled.rate', value: 1000 },
    ])).toEqual({ 'leader.imbalance.per.broker.percentage': '20', 'leader.replication.throttled.rate': '1000' });
    expect(set).toEqual({ 'auto.leader.rebalance.enable': 'false', 'leader.imbalance.per.broker.percentage': '20' });
  });

  it('applies nothing when one change is invalid, a reset names an unknown config, or a name comes twice', () => {
    expect(() => applyClusterConfigChanges({}, [{ name: 'tributary.balancer.enable', value: 'false' }, { name: 'leader.imbalance.per.broker.percentage', value: '200' }]))
      .toThrow(expect.objectContaining({ kafkaName: 'INVALID_CONFIG' }));
    expect(() => applyClusterConfigChanges({}, [{ name: 'nope', value: null }])).toThrow(/Unknown broker config name: nope/);
    expect(() => applyClusterConfigChanges({}, [{ name: 'tributary.balancer.enable', value: 'false' }, { name: 'tributary.balancer.enable', value: null }]))
      .toThrow(/Duplicate config name/);
  });
});

describe('Function: effectiveClusterConfigs', () => {
  it("gives Kafka's defaults, and Tributary's finite throttle, typed", () => {
    expect(effectiveClusterConfigs({})).toEqual({
      'auto.leader.rebalance.enable': true,
      'leader.imbalance.per.broker.percentage': 10,
      'leader.imbalance.check.interval.seconds': 300,
      'leader.replication.throttled.rate': 10_485_760,
      'follower.replication.throttled.rate': 10_485_760,
      'tributary.balancer.enable': true,
      'tributary.log.format.version': 1,
    });
  });

  it('parses the set values', () => {
    expect(effectiveClusterConfigs({ 'auto.leader.rebalance.enable': 'false', 'leader.imbalance.check.interval.seconds': '60', 'tributary.balancer.enable': 'false' }))
      .toMatchObject({ 'auto.leader.rebalance.enable': false, 'leader.imbalance.check.interval.seconds': 60, 'tributary.balancer.enable': false });
  });
});

describe('Function: clusterConfigEntries', () => {
  it('lists every known config sorted by name, marks the set ones and carries each default', () => {
    const entries = clusterConfigEntries({ 'leader.imbalance.per.broker.percentage': '25', 'not.a.config': 'x' });
    expect(entries.map((e) => e.name)).toEqual([...entries.map((e) => e.name)].sort());
    expect(entries.map((e) => e.name).every(isClusterConfig)).toBe(true);
    expect(entries).toHaveLength(7);
    expect(entries.find((e) => e.name === 'leader.imbalance.per.broker.percentage')).toMatchObject({ value: '25', default: '10', isDefault: false });
    expect(entries.find((e) => e.name === 'tributary.balancer.enable')).toMatchObject({ value: 'true', default: 'true', isDefault: true });
    for (const e of entries) expect(e.doc.length).toBeGreaterThan(0);
  });
});
