/**
 * The push subscription's rules (push-reader.ts), over what its receiver accepted (reads of
 * process `push`) and the final log:
 * - push-skip: a record of the final log below the offset the subscription's group committed at
 *   the end that no accepted delivery carried: a delivery committed past it. Partitions an unclean
 *   election cut are left out: a log cut back below a committed offset and written again is
 *   skipped by any consumer at that offset, Kafka's too.
 * - push-behind: the group had not caught up with the log when the run ended, the faults healed.
 */
import type { FaultEvent, FinalReadEvent, PushFinalEvent, ReadEvent } from './history.js';

export interface PushAnomaly {
  readonly kind: 'push-skip' | 'push-behind';
  readonly message: string;
  readonly events: number[];
}

const key = (topic: string, partition: number) => `${topic}#${partition}`;

export function checkPush(reads: readonly ReadEvent[], finals: readonly FinalReadEvent[], push: PushFinalEvent | undefined, faults: readonly FaultEvent[]): PushAnomaly[] {
  if (!push) return [];
  const out: PushAnomaly[] = [];
  if (!push.caughtUp) out.push({ kind: 'push-behind', message: `the push subscription's group ${push.group} had not caught up with the log when the run ended (committed: ${push.offsets.map((o) => `${key(o.topic, o.partition)} ${o.offset}`).join(', ') || 'none'})`, events: [push.id] });
  const cut = new Set(faults.flatMap((f) => (f.cut ? [key(f.cut.topic, f.cut.partition)] : [])));
  const delivered = new Set<string>();
  for (const r of reads) if (r.process === 'push' && r.outcome === 'ok') for (const x of r.records) delivered.add(`${key(r.topic, r.partition)}#${x.offset}#${x.value}`);
  for (const o of push.offsets) {
    if (cut.has(key(o.topic, o.partition))) continue;
    const final = finals.find((f) => f.topic === o.topic && f.partition === o.partition);
    const skipped = final?.records.filter((x) => x.offset < o.offset && !delivered.has(`${key(o.topic, o.partition)}#${x.offset}#${x.value}`)) ?? [];
    if (skipped.length > 0) {
      const first = skipped[0]!;
      out.push({ kind: 'push-skip', message: `the push subscription committed ${key(o.topic, o.partition)} to ${o.offset} but never delivered ${skipped.length} record(s) below it, the first at offset ${first.offset} ("${first.value}")`, events: [push.id, final!.id] });
    }
  }
  return out;
}
