/** A transactional producer over HTTP for end-to-end tests: init, send in the transaction, end. */
import { expect } from 'vitest';
import { call, v3 } from './api.js';

export interface Producer { readonly id: string; producer_id: number; producer_epoch: number; seq: Map<number, number> }

export async function init(id: string, timeoutMs?: number): Promise<Producer> {
  const r = await call('POST', v3(`/transactions/${id}/producer`), timeoutMs === undefined ? {} : { transaction_timeout_ms: timeoutMs });
  expect(r.status, r.text).toBe(200);
  expect(r.body).toMatchObject({ kind: 'KafkaTransactionalProducer', transactional_id: id });
  return { id, producer_id: r.body.producer_id, producer_epoch: r.body.producer_epoch, seq: new Map() };
}

/** Sends values to a partition in the producer's transaction (sequences from 0 in each epoch). */
export async function send(p: Producer, topic: string, partition: number, values: string[]) {
  const first = p.seq.get(partition) ?? 0;
  p.seq.set(partition, first + values.length);
  const body = values.map((v, i) => JSON.stringify({ partition_id: partition, sequence: first + i, value: { type: 'STRING', data: v } })).join('\n');
  return call('POST', v3(`/topics/${topic}/records?acks=all&transactional_id=${p.id}&producer_id=${p.producer_id}&producer_epoch=${p.producer_epoch}`), body);
}

export async function end(p: Producer, commit: boolean) {
  const r = await call('POST', v3(`/transactions/${p.id}/end`), { producer_id: p.producer_id, producer_epoch: p.producer_epoch, commit });
  if (r.status === 200) {
    p.producer_epoch = r.body.producer_epoch;
    p.seq.clear();
  }
  return r;
}
