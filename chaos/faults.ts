/** The chaos harness's faults: their kinds, and one fault of a schedule as drawn from a seeded random source. */
import type { TP } from './history.js';

export const FAULT_KINDS = [
  'kill-broker', 'wipe-broker', 'pause-broker', 'pause-controller', 'kill-gateway', 'net-delay', 'net-drop', 'net-reset',
  'kill-leader-after-ack', 'pause-copier', 'drop-stream-batch', 'add-broker', 'remove-broker', 'reassign',
  'unclean-election', 'delete-records', 'kill-instance', 'lose-commit-answer',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One fault of the schedule, every field drawn whatever the kind. */
export interface PlannedFault {
  readonly kind: FaultKind;
  readonly broker: number;
  readonly controller: string;
  readonly gateway: string;
  readonly tp: TP;
  readonly holdMs: number;
  readonly gapMs: number;
  /** In [0, 1): where in its window a timed step lands (a pause after a write was sent, say); delete-records: how far from the log start to the high watermark it deletes. */
  readonly moment: number;
  /**
   * `pause-copier`: pause a controller doing catch-up rather than a gateway copying for acks=all.
   * `reassign`: `gateway` cancels the reassignment on heal, `controller` lets it complete.
   */
  readonly copier: 'controller' | 'gateway';
}

/** What a schedule draws its faults from (the nemesis's options of the same names). */
export interface FaultChoices {
  readonly kinds: readonly FaultKind[];
  readonly brokers: readonly number[];
  readonly controllers: readonly string[];
  readonly gateways: readonly string[];
  readonly partitions: readonly TP[];
  readonly holdMs: readonly [number, number];
  readonly gapMs: readonly [number, number];
}

export function planFault(random: () => number, o: FaultChoices): PlannedFault {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const between = ([min, max]: readonly [number, number]) => min + Math.floor(random() * (max - min));
  return {
    kind: pick(o.kinds), broker: pick(o.brokers), controller: pick(o.controllers), gateway: pick(o.gateways), tp: pick(o.partitions),
    holdMs: between(o.holdMs), gapMs: between(o.gapMs), moment: random(), copier: random() < 0.5 ? 'controller' : 'gateway',
  };
}
