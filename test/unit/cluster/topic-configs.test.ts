import { describe, expect, it } from 'vitest';
import { checkTopicConfigs, effectiveConfigs, numericConfig } from '../../../lib/cluster/topic-configs.js';

describe('Function: checkTopicConfigs', () => {
  it('accepts Kafka names with valid values and normalises them to strings', () => {
    expect(checkTopicConfigs([
      { name: 'retention.ms', value: -1 }, { name: 'cleanup.policy', value: 'compact,delete' }, { name: 'min.insync.replicas', value: '2' },
      { name: 'unclean.leader.election.enable', value: true },
    ])).toEqual({ 'retention.ms': '-1', 'cleanup.policy': 'compact,delete', 'min.insync.replicas': '2', 'unclean.leader.election.enable': 'true' });
  });

  it.each([
    ['no.such.config', '1', /Unknown topic config name/],
    ['retention.ms', 'abc', /retention.ms/],
    ['retention.ms', '-2', /retention.ms/],
    ['min.insync.replicas', '0', /min.insync.replicas/],
    ['cleanup.policy', 'forever', /cleanup.policy/],
    ['compression.type', 'zstd', /compression.type/],
    ['max.message.bytes', '1.5', /max.message.bytes/],
    ['unclean.leader.election.enable', 'yes', /unclean/],
  ])('rejects %s=%s with INVALID_CONFIG', (name, value, message) => {
    expect(() => checkTopicConfigs([{ name, value }])).toThrow(message);
    try {
      checkTopicConfigs([{ name, value }]);
    } catch (err) {
      expect(err).toMatchObject({ kafkaName: 'INVALID_CONFIG' });
    }
  });

  it('rejects a name given twice', () => {
    expect(() => checkTopicConfigs([{ name: 'retention.ms', value: '1' }, { name: 'retention.ms', value: '2' }])).toThrow(/Duplicate/);
  });
});

describe('Function: effectiveConfigs', () => {
  it("lists every config with Kafka's defaults, marking what the topic set", () => {
    const all = effectiveConfigs({ 'retention.ms': '1000' });
    expect(all.find((c) => c.name === 'retention.ms')).toMatchObject({ value: '1000', isDefault: false });
    expect(all.find((c) => c.name === 'max.message.bytes')).toMatchObject({ value: '1048588', isDefault: true });
    expect(all.find((c) => c.name === 'cleanup.policy')).toMatchObject({ value: 'delete', isDefault: true });
    expect(numericConfig({}, 'min.insync.replicas')).toBe(1);
  });
});
