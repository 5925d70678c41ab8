/**
 * Kafka's three partition assignors — RangeAssignor, RoundRobinAssignor and (Cooperative)StickyAssignor
 * — computed by the coordinator, as KIP-848 moves assignment to the server. Pure and deterministic:
 * the same members, in any order, with `topics` and `owned` in any order, give the same Assignment.
 *
 * Internally a partition is a dense integer id in (topic, partition) order and a member is its index
 * in memberId order, so sorting ids sorts partitions and every tie-break is by memberId.
 */
import { KafkaError } from '../protocol/errors.js';

export interface TopicPartition { readonly topic: string; readonly partition: number }

export interface AssignorMember {
  readonly memberId: string;
  /** Topics the member is subscribed to (already resolved from patterns); topics not in `partitions` are ignored. */
  readonly topics: readonly string[];
  /**
   * What it owns now (stickiness input, read by `sticky` only). Stale entries — deleted topics,
   * partitions beyond the count, topics it no longer subscribes to — are ignored; a partition claimed by
   * two members is taken from both, as Kafka does for claims from the same generation.
   */
  readonly owned?: readonly TopicPartition[];
}

export type AssignorName = 'range' | 'roundrobin' | 'sticky';

/** memberId → its partitions, sorted by (topic, partition); every member appears (possibly with []), in memberId order. */
export type Assignment = Map<string, TopicPartition[]>;

export const ASSIGNORS: readonly AssignorName[] = ['range', 'roundrobin', 'sticky'];

export const tpKey = (tp: TopicPartition): string => `${tp.topic}#${tp.partition}`;

/** Java's String.compareTo: UTF-16 code units, no locale. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The input in integer form. */
interface Problem {
  readonly members: readonly AssignorMember[]; // sorted by memberId
  readonly topics: readonly string[]; // sorted; only topics with partitions and a subscriber
  readonly topicIndex: ReadonlyMap<string, number>;
  readonly first: Int32Array; // topic → id of its partition 0
  readonly counts: Int32Array; // topic → partition count
  readonly subscribers: readonly Int32Array[]; // topic → member indices, ascending
  readonly topicOf: Int32Array; // partition id → topic
  readonly total: number;
}

/**
 * Assigns every partition of every subscribed topic to exactly one member subscribed to its topic.
 * @throws KafkaError INVALID_REQUEST for an unknown assignor, duplicate memberIds or a bad partition count.
 */
export function assign(name: AssignorName, members: readonly AssignorMember[], partitionsPerTopic: Readonly<Record<string, number>>): Assignment {
  if (!ASSIGNORS.includes(name)) throw new KafkaError('INVALID_REQUEST', `Unknown partition assignor '${String(name)}'; expected one of ${ASSIGNORS.join(', ')}`);
  const pb = problem(members, partitionsPerTopic);
  const ids = name === 'range' ? range(pb) : name === 'roundrobin' ? roundRobin(pb) : sticky(pb);
  const out: Assignment = new Map();
  pb.members.forEach((m, i) => {
    const mine = ids[i] ?? [];
    out.set(m.memberId, mine.map((p) => {
      const t = pb.topicOf[p] as number;
      return { topic: pb.topics[t] as string, partition: p - (pb.first[t] as number) };
    }));
  });
  return out;
}

function problem(members: readonly AssignorMember[], partitionsPerTopic: Readonly<Record<string, number>>): Problem {
  const sorted = [...members].sort((a, b) => compare(a.memberId, b.memberId));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]?.memberId === sorted[i - 1]?.memberId) throw new KafkaError('INVALID_REQUEST', `Duplicate memberId '${sorted[i]?.memberId}' in assignment input`);
  }
  const known = new Map<string, number>();
  for (const [topic, n] of Object.entries(partitionsPerTopic)) {
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new KafkaError('INVALID_REQUEST', `Invalid partition count ${String(n)} for topic '${topic}'`);
    if (n > 0) known.set(topic, n);
  }
  const knownTopics = [...known.keys()].sort(compare);
  const knownIndex = new Map(knownTopics.map((t, k) => [t, k]));
  // Members often share one subscription list, so each distinct list is resolved once.
  const resolved = new Map<readonly string[], Int32Array>();
  const seenBy = new Int32Array(knownTopics.length).fill(-1);
  const rows = sorted.map((m, i) => {
    let row = resolved.get(m.topics);
    if (row === undefined) {
      const ks: number[] = [];
      for (const topic of m.topics) {
        const k = knownIndex.get(topic);
        if (k !== undefined && seenBy[k] !== i) { seenBy[k] = i; ks.push(k); }
      }
      row = Int32Array.from(ks);
      resolved.set(m.topics, row);
    }
    return row;
  });
  const remap = new Int32Array(knownTopics.length).fill(-1);
  const topics: string[] = [];
  knownTopics.forEach((topic, k) => { if ((seenBy[k] as number) >= 0) { remap[k] = topics.length; topics.push(topic); } });
  for (const row of resolved.values()) for (let j = 0; j < row.length; j++) row[j] = remap[row[j] as number] as number;
  const topicIndex = new Map(topics.map((t, i) => [t, i]));
  const counts = Int32Array.from(topics, (t) => known.get(t) as number);
  const first = new Int32Array(topics.length);
  let total = 0;
  counts.forEach((n, t) => { first[t] = total; total += n; });
  const topicOf = new Int32Array(total);
  counts.forEach((n, t) => topicOf.fill(t, first[t], (first[t] as number) + n));

  // topic → subscribers as one flat typed list rather than a Set per member: 1,000 members × 5,000 topics stays fast.
  const subscribers = csr(topics.length, rows);
  return { members: sorted, topics, topicIndex, first, counts, subscribers, topicOf, total };
}

/** Transposes `rows` (row index → columns) into column index → the rows holding it, rows ascending. */
function csr(columns: number, rows: readonly ArrayLike<number>[]): Int32Array[] {
  const start = new Int32Array(columns + 1);
  for (const row of rows) for (let j = 0; j < row.length; j++) { const c = row[j] as number; start[c + 1] = (start[c + 1] as number) + 1; }
  for (let c = 0; c < columns; c++) start[c + 1] = (start[c + 1] as number) + (start[c] as number);
  const flat = new Int32Array(start[columns] as number);
  const next = start.slice(0, columns);
  rows.forEach((row, r) => {
    for (let j = 0; j < row.length; j++) { const c = row[j] as number; flat[next[c] as number] = r; next[c] = (next[c] as number) + 1; }
  });
  return Array.from({ length: columns }, (_, c) => flat.subarray(start[c], start[c + 1]));
}

/** Whether a member is subscribed to a topic (binary search in the topic's ascending subscribers). */
function subscribed(pb: Problem, m: number, t: number): boolean {
  const list = pb.subscribers[t];
  return list !== undefined && list[firstAtLeast(list, m)] === m;
}

/** Index of the first element ≥ x in an ascending array (its length if none). */
function firstAtLeast(list: Int32Array, x: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as number) < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** RangeAssignor: per topic, contiguous ranges to its subscribers in memberId order; the first n % c get one more. */
function range(pb: Problem): number[][] {
  const out: number[][] = pb.members.map(() => []);
  pb.topics.forEach((_, t) => {
    const subs = pb.subscribers[t] ?? [];
    const n = pb.counts[t] as number;
    const quota = Math.floor(n / subs.length);
    const extra = n % subs.length;
    let next = pb.first[t] as number;
    // Only the first n members get anything when a topic has fewer partitions than subscribers.
    for (let i = 0; i < Math.min(n, subs.length); i++) {
      for (let k = quota + (i < extra ? 1 : 0); k > 0; k--) out[subs[i] as number]?.push(next++);
    }
  });
  return out;
}

/** RoundRobinAssignor: all partitions in (topic, partition) order dealt around the members, skipping the unsubscribed. */
function roundRobin(pb: Problem): number[][] {
  const out: number[][] = pb.members.map(() => []);
  const n = pb.members.length;
  let cursor = 0;
  for (let p = 0; p < pb.total; p++) {
    // The next subscriber at or after the cursor, wrapping: Kafka's CircularIterator skipping the unsubscribed.
    const subs = pb.subscribers[pb.topicOf[p] as number] as Int32Array;
    const at = firstAtLeast(subs, cursor);
    const m = (at < subs.length ? subs[at] : subs[0]) as number;
    out[m]?.push(p);
    cursor = (m + 1) % n;
  }
  return out;
}

/** StickyAssignor: balance first, then keep as many valid owned partitions where they are as balance allows. */
function sticky(pb: Problem): number[][] {
  const n = pb.members.length;
  if (n === 0) return [];
  // claim[p]: the one member validly claiming p, -1 for none, -2 for a double claim (dropped from both).
  const claim = new Int32Array(pb.total).fill(-1);
  pb.members.forEach((m, i) => {
    for (const tp of m.owned ?? []) {
      const t = pb.topicIndex.get(tp.topic);
      if (t === undefined || !subscribed(pb, i, t)) continue;
      if (!Number.isInteger(tp.partition) || tp.partition < 0 || tp.partition >= (pb.counts[t] as number)) continue;
      const p = (pb.first[t] as number) + tp.partition;
      const c = claim[p] as number;
      if (c === -1) claim[p] = i; else if (c !== i) claim[p] = -2;
    }
  });
  const owned: number[][] = pb.members.map(() => []);
  for (let p = 0; p < pb.total; p++) { const c = claim[p] as number; if (c >= 0) owned[c]?.push(p); }

  // Every topic here has a subscriber, so subscriptions are identical when every topic has them all.
  const identical = pb.subscribers.every((s) => s.length === n);
  const out = identical ? constrained(pb, owned) : general(pb, claim);
  for (const list of out) list.sort((a, b) => a - b);
  return out;
}

/**
 * Kafka's constrainedAssign, for identical subscriptions: quotas floor(P/M) and ceil(P/M), exactly
 * P % M members at the larger; members that owned more keep the larger quota first.
 */
function constrained(pb: Problem, owned: readonly number[][]): number[][] {
  const n = pb.members.length;
  const minQuota = Math.floor(pb.total / n);
  const expectedAtMax = pb.total % n;
  const maxQuota = minQuota + (expectedAtMax > 0 ? 1 : 0);
  const ownedCount = (m: number) => owned[m]?.length ?? 0;
  const byOwnedDesc = [...Array(n).keys()].sort((a, b) => ownedCount(b) - ownedCount(a) || a - b);
  const out: number[][] = pb.members.map(() => []);
  const taken = new Uint8Array(pb.total);
  let atMax = 0;
  for (const m of byOwnedDesc) {
    const mine = owned[m] ?? [];
    const keep = mine.length >= maxQuota && atMax < expectedAtMax ? (atMax++, maxQuota) : Math.min(mine.length, minQuota);
    const kept = mine.slice(0, keep);
    for (const p of kept) taken[p] = 1;
    out[m] = kept;
  }
  const free: number[] = [];
  for (let p = 0; p < pb.total; p++) if (!taken[p]) free.push(p);
  let next = 0;
  // Dealt one at a time, so a member filling up gets partitions from several topics rather than one range.
  let ring = [...Array(n).keys()].filter((m) => (out[m]?.length ?? 0) < minQuota);
  while (ring.length > 0) {
    const again: number[] = [];
    for (const m of ring) {
      const list = out[m] as number[];
      list.push(free[next++] as number);
      if (list.length < minQuota) again.push(m);
    }
    ring = again;
  }
  // The remaining P % M − atMax go one each to members at the minimum, those that owned least first:
  // a member already being filled takes the extra, so a member that kept its partitions sees no change.
  const extras = [...Array(n).keys()].filter((m) => out[m]?.length === minQuota).sort((a, b) => ownedCount(a) - ownedCount(b) || a - b);
  for (const m of extras) {
    if (next >= free.length) break;
    out[m]?.push(free[next++] as number);
  }
  return out;
}

/** A member's partitions of one topic: those it validly claimed, and the rest (moved first, being free to move). */
interface Holding { readonly claimed: number[]; readonly other: number[] }

/**
 * For mixed subscriptions: keep every valid owned partition; give each unowned partition to its least
 * loaded subscriber (topics with fewest subscribers first); then, topic by topic until nothing moves,
 * move a partition from its most loaded holder to its least loaded subscriber while they differ by 2+.
 * Each move lowers the sum of squared counts, so this ends, and it ends with no such move left.
 */
function general(pb: Problem, claim: Int32Array): number[][] {
  const n = pb.members.length;
  const count = new Int32Array(n);
  const load = (m: number) => count[m] as number;
  const holdings = pb.topics.map(() => new Map<number, Holding>());
  const give = (m: number, p: number) => {
    const h = holdings[pb.topicOf[p] as number] as Map<number, Holding>;
    let mine = h.get(m);
    if (!mine) h.set(m, mine = { claimed: [], other: [] });
    (claim[p] === m ? mine.claimed : mine.other).push(p);
    count[m] = load(m) + 1;
  };
  const take = (m: number, t: number): number => {
    const h = holdings[t] as Map<number, Holding>;
    const mine = h.get(m) as Holding;
    const p = (mine.other.length > 0 ? mine.other.pop() : mine.claimed.pop()) as number;
    if (mine.other.length === 0 && mine.claimed.length === 0) h.delete(m);
    count[m] = load(m) - 1;
    return p;
  };
  for (let p = 0; p < pb.total; p++) { const c = claim[p] as number; if (c >= 0) give(c, p); }

  const order = [...pb.topics.keys()].sort((a, b) => (pb.subscribers[a]?.length ?? 0) - (pb.subscribers[b]?.length ?? 0) || a - b);
  const less = (a: number, b: number) => load(a) < load(b) || (load(a) === load(b) && a < b);
  for (const t of order) {
    const first = pb.first[t] as number;
    const heap = new MinHeap(pb.subscribers[t] ?? new Int32Array(0), less);
    for (let p = first; p < first + (pb.counts[t] as number); p++) {
      if ((claim[p] as number) >= 0) continue;
      const m = heap.pop();
      give(m, p);
      heap.push(m);
    }
  }

  for (let moved = true; moved;) {
    moved = false;
    for (const t of order) {
      const h = holdings[t] as Map<number, Holding>;
      for (;;) {
        let from = -1;
        for (const m of h.keys()) if (from < 0 || load(m) > load(from) || (load(m) === load(from) && m < from)) from = m;
        let to = -1;
        for (const m of pb.subscribers[t] ?? []) if (to < 0 || less(m, to)) to = m;
        if (from < 0 || load(from) - load(to) < 2) break;
        give(to, take(from, t));
        moved = true;
      }
    }
  }

  const out: number[][] = pb.members.map(() => []);
  for (const h of holdings) {
    for (const [m, mine] of h) {
      const list = out[m] as number[];
      for (const p of mine.claimed) list.push(p);
      for (const p of mine.other) list.push(p);
    }
  }
  return out;
}

/** A binary min-heap of member indices under an ordering that may read state outside the heap; it never outgrows its start. */
class MinHeap {
  private readonly items: Int32Array;
  private size: number;
  constructor(items: Int32Array, private readonly less: (a: number, b: number) => boolean) {
    this.items = items.slice();
    this.size = items.length;
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.down(i);
  }
  push(x: number): void {
    const a = this.items;
    let i = this.size++;
    a[i] = x;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(a[i] as number, a[parent] as number)) break;
      this.swap(i, parent);
      i = parent;
    }
  }
  pop(): number {
    const a = this.items;
    const top = a[0] as number;
    a[0] = a[--this.size] as number;
    if (this.size > 0) this.down(0);
    return top;
  }
  private down(i: number): void {
    const a = this.items;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < this.size && this.less(a[l] as number, a[best] as number)) best = l;
      if (r < this.size && this.less(a[r] as number, a[best] as number)) best = r;
      if (best === i) return;
      this.swap(i, best);
      i = best;
    }
  }
  private swap(i: number, j: number): void {
    const a = this.items;
    const x = a[i] as number;
    a[i] = a[j] as number;
    a[j] = x;
  }
}
