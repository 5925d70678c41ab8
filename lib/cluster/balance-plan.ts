/**
 * The self-balancing planner, pure: from the brokers and every partition's replica list, the
 * reassignments that bring the cluster to balance with the fewest replica moves. Goals, in order:
 *   1. drain decommissioning brokers (every replica on one moves to an alive broker);
 *   2. replicas per alive broker within one of each other (floor or ceil of the mean);
 *   3. preferred leaders (replicas[0]) per alive broker within one: a move that goal 2 needs anyway
 *      carries a leadership where that helps, the rest is done by reordering replica lists, which
 *      moves no data;
 *   4. bytes per broker: a tie-breaker when choosing which replica moves (3→4 brokers with
 *      partitions of 1 to 48 MiB: every broker within 2% of the mean).
 * Throughout, a partition keeps its replication factor on distinct brokers, and its rack spread
 * (distinct racks among its replicas) never drops below what it was, except where a drain leaves
 * too few racks to hold it; spread below what the alive racks allow is fixed. Fenced brokers keep
 * their replicas (Kafka moves nothing when a broker fails), receive none and are not counted;
 * brokers the list does not name are treated as fenced. Each step depends only on the state it
 * starts from, so planning again after applying a plan gives [] and a plan cut short by maxMoves
 * is continued by the next one.
 */
import { KafkaError } from '../protocol/errors.js';

export interface PlanBroker {
  readonly brokerId: number;
  readonly rack: string | null;
  readonly state: 'alive' | 'fenced' | 'decommissioning';
}

export interface PlanPartition {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
  /** bytes held by one replica (an estimate; 0 when unknown) */
  readonly bytes: number;
}

export interface PlanMove {
  readonly topic: string;
  readonly partition: number;
  readonly from: readonly number[];
  readonly to: readonly number[];
}

export interface PlanOptions {
  /** stop after this many replica moves (a move = one replica changes broker); reorders are free @default Infinity */
  readonly maxMoves?: number;
}

/** Replicas of `to` that are not in `from`: the replica moves (data copies) a reassignment costs. */
export function replicaMoves(from: readonly number[], to: readonly number[]): number {
  return to.filter((b) => !from.includes(b)).length;
}

/**
 * Kafka's leader imbalance ratio per broker (checked against leader.imbalance.per.broker.percentage):
 * of the partitions whose preferred leader (replicas[0]) is the broker, the share it does not lead.
 */
export function leaderImbalance(partitions: readonly { replicas: readonly number[]; leader: number }[]): Map<number, number> {
  const preferred = new Map<number, number>();
  const notLed = new Map<number, number>();
  for (const p of partitions) {
    const b = p.replicas[0];
    if (b === undefined) continue;
    preferred.set(b, (preferred.get(b) ?? 0) + 1);
    if (p.leader !== b) notLed.set(b, (notLed.get(b) ?? 0) + 1);
  }
  return new Map([...preferred].sort(([a], [b]) => a - b).map(([b, n]) => [b, (notLed.get(b) ?? 0) / n]));
}

/**
 * The fewest replica moves any plan needs to drain and balance replica counts when racks do not
 * constrain: the drainable replicas on decommissioning brokers, plus each alive broker's excess over
 * its target (floor or ceil of the mean, the ceil going to the most loaded). A plan can need more:
 * a drained replica whose only possible brokers are full lands on one of them, which then sheds one.
 */
export function movesLowerBound(brokers: readonly PlanBroker[], partitions: readonly PlanPartition[]): number {
  const s = new Balancer(brokers, partitions, Infinity);
  return s.drainable + s.phi();
}

export function planBalance(brokers: readonly PlanBroker[], partitions: readonly PlanPartition[], o: PlanOptions = {}): PlanMove[] {
  const maxMoves = o.maxMoves ?? Infinity;
  if (!(maxMoves >= 0)) throw new KafkaError('INVALID_REQUEST', `maxMoves must be 0 or more, not ${maxMoves}.`);
  const s = new Balancer(brokers, partitions, maxMoves);
  if (s.alive.length > 0) {
    s.drain();
    s.fixRacks();
    s.balanceCounts();
    s.balanceLeaders();
  }
  const out: PlanMove[] = [];
  partitions.forEach((p, i) => {
    const to = s.replicas[i] as number[];
    if (to.some((b, j) => b !== p.replicas[j])) out.push({ topic: p.topic, partition: p.partition, from: p.replicas, to });
  });
  return out;
}

const byId = (a: number, b: number): number => a - b;

/** The plan's working state: replica lists being rewritten, and per alive broker its replicas and bytes. */
class Balancer {
  readonly replicas: number[][];
  readonly alive: number[];
  readonly drainable: number;
  private readonly isAlive: Set<number>;
  private readonly decommissioning: Set<number>;
  private readonly rack: Map<number, string>;
  private readonly aliveRacks: Set<string>;
  private readonly holds = new Map<number, Set<number>>();
  private readonly bytes = new Map<number, number>();
  /** Alive broker -> the partitions it is the preferred leader of. */
  private readonly ledBy = new Map<number, Set<number>>();
  /** Bytes per alive broker once balanced: the bytes tie-breaker aims each broker at it. */
  private readonly meanBytes: number;
  /** Bumped whenever a partition the broker holds changes: a pair that found no move stays failed until then. */
  private readonly version = new Map<number, number>();
  /** Targets: every alive broker holds `floor` replicas, `extra` of them one more. */
  private readonly floor: number;
  private readonly extra: number;
  /** Replica moves of the plan so far, counted as replicaMoves(from, to) summed: a replica moved twice is one copy. */
  private moves = 0;

  constructor(brokers: readonly PlanBroker[], private readonly partitions: readonly PlanPartition[], private readonly maxMoves: number) {
    this.replicas = partitions.map((p) => [...p.replicas]);
    this.rack = new Map(brokers.map((b) => [b.brokerId, b.rack ?? '']));
    this.alive = brokers.filter((b) => b.state === 'alive').map((b) => b.brokerId).sort(byId);
    this.isAlive = new Set(this.alive);
    this.decommissioning = new Set(brokers.filter((b) => b.state === 'decommissioning').map((b) => b.brokerId));
    this.aliveRacks = new Set(this.alive.map((b) => this.rackOf(b)));
    for (const b of this.alive) {
      this.holds.set(b, new Set());
      this.bytes.set(b, 0);
      this.ledBy.set(b, new Set());
      this.version.set(b, 0);
    }
    let total = 0;
    let drainable = 0;
    let bytes = 0;
    this.replicas.forEach((rs, i) => {
      for (const b of rs) if (this.isAlive.has(b)) this.add(b, i);
      this.ledBy.get(rs[0] as number)?.add(i);
      const onAlive = rs.filter((b) => this.isAlive.has(b)).length;
      const drained = Math.min(rs.filter((b) => this.decommissioning.has(b)).length, this.alive.length - onAlive);
      drainable += drained;
      total += onAlive + drained;
      bytes += (onAlive + drained) * (partitions[i]?.bytes ?? 0);
    });
    this.drainable = drainable;
    const n = Math.max(this.alive.length, 1);
    this.meanBytes = bytes / n;
    this.floor = Math.floor(total / n);
    this.extra = total % n;
  }

  /**
   * How far replica counts are from balance, in moves: each broker's replicas above floor, less one
   * for each of the `extra` brokers allowed floor + 1. A move from the fullest broker to the emptiest
   * lowers it by exactly one.
   */
  phi(): number {
    const { excess, above } = this.phiParts();
    return excess - Math.min(this.extra, above);
  }

  private phiParts(): { excess: number; above: number } {
    let excess = 0;
    let above = 0;
    for (const b of this.alive) {
      excess += Math.max(0, this.count(b) - this.floor);
      if (this.count(b) > this.floor) above += 1;
    }
    return { excess, above };
  }

  /** phi after one replica moves from o to u, from the parts phiParts() gave. */
  private phiAfter({ excess, above }: { excess: number; above: number }, o: number, u: number): number {
    const co = this.count(o);
    const cu = this.count(u);
    if (co > this.floor) excess -= 1;
    if (co === this.floor + 1) above -= 1;
    if (cu >= this.floor) excess += 1;
    if (cu === this.floor) above += 1;
    return excess - Math.min(this.extra, above);
  }

  /** Goal 1: each replica on a decommissioning broker goes to the alive broker outside its partition that keeps the most racks, then the emptiest. */
  drain(): void {
    // Partitions with the fewest brokers to go to first, so the others still find an emptier one.
    const order = this.replicas
      .map((rs, i) => ({ i, room: this.alive.length - rs.filter((b) => this.isAlive.has(b)).length }))
      .filter(({ i }) => this.replicas[i]?.some((b) => this.decommissioning.has(b)))
      .sort((a, b) => a.room - b.room || a.i - b.i);
    for (const { i } of order) {
      const rs = this.replicas[i] as number[];
      rs.forEach((b, j) => {
        if (!this.decommissioning.has(b) || this.moves >= this.maxMoves) return;
        const best = this.rank(this.alive.filter((u) => !rs.includes(u)).map((u) => ({ u, spread: this.spreadWith(rs, j, u) })));
        if (best) this.move(i, j, best.u);
      });
    }
  }

  /** Rack spread below what the alive racks allow: a replica sharing its rack moves to a rack the partition lacks. */
  fixRacks(): void {
    this.replicas.forEach((rs, i) => {
      while (this.moves < this.maxMoves && this.spread(rs) < this.maxSpread(rs)) {
        const racks = rs.map((b) => this.rackOf(b));
        const sources = rs
          .map((b, j) => ({ b, j }))
          .filter(({ b, j }) => (this.isAlive.has(b) || this.decommissioning.has(b)) && racks.indexOf(racks[j] as string) !== racks.lastIndexOf(racks[j] as string))
          // Decommissioning first, then the fullest broker, then a follower rather than the preferred leader.
          .sort((x, y) => Number(this.isAlive.has(x.b)) - Number(this.isAlive.has(y.b)) || this.count(y.b) - this.count(x.b) || y.j - x.j);
        const source = sources[0];
        const best = this.rank(this.alive.filter((u) => !racks.includes(this.rackOf(u))).map((u) => ({ u, spread: 0 })));
        if (!source || !best) return;
        this.move(i, source.j, best.u);
      }
    });
  }

  /**
   * Goal 2: move a replica from the fullest broker to the emptiest that a partition allows (not
   * already on the emptier broker, rack spread kept), goals 3 and 4 choosing the partition. Moves
   * that lower phi first: without decommissioning brokers or rack violations, the plan makes exactly
   * phi() moves, the minimum. Where racks block all of those, any move between brokers two or more
   * apart (each one lowers the sum of squared counts, so this ends).
   */
  balanceCounts(): void {
    const failed = new Map<string, string>();
    while (this.moves < this.maxMoves) {
      const load = this.alive.map((b) => ({ b, c: this.count(b), bytes: this.bytesOf(b) }));
      const full = [...load].sort((x, y) => y.c - x.c || y.bytes - x.bytes || x.b - y.b).map(({ b }) => b);
      const empty = load.sort((x, y) => x.c - y.c || x.bytes - y.bytes || x.b - y.b).map(({ b }) => b);
      const parts = this.phiParts();
      const phi = parts.excess - Math.min(this.extra, parts.above);
      const pick = this.pickMove(full, empty, failed, (o, u) => this.phiAfter(parts, o, u) < phi)
        ?? this.pickMove(full, empty, failed, () => true);
      if (!pick) return;
      this.move(pick.i, pick.j, pick.u);
    }
  }

  /** The first pair, fullest and emptiest first, two or more apart and accepted, with a partition to move. */
  private pickMove(
    full: readonly number[], empty: readonly number[], failed: Map<string, string>, accept: (o: number, u: number) => boolean,
  ): { i: number; j: number; u: number } | undefined {
    for (const o of full) {
      for (const u of empty) {
        if (this.count(o) - this.count(u) < 2) break;
        if (!accept(o, u)) continue;
        const key = `${o}>${u}`;
        const stamp = `${this.version.get(o)}/${this.version.get(u)}`;
        if (failed.get(key) === stamp) continue;
        const pick = this.pickPartition(o, u);
        if (pick) return { ...pick, u };
        failed.set(key, stamp);
      }
    }
    return undefined;
  }

  /**
   * Goal 3, by reordering: the least-leading broker takes the preferred leadership of a partition it
   * holds from a broker leading at least two more; failing that, a broker leading at least two more
   * than another hands one along the shortest chain of partitions (each led by one broker of the
   * chain and holding the next) to the least-leading broker it reaches. Ends when no such chain exists.
   */
  balanceLeaders(): void {
    this.replicas.forEach((rs, i) => {
      // A decommissioning broker that could not be drained stops being the preferred leader.
      if (!this.decommissioning.has(rs[0] as number)) return;
      const to = rs.filter((b) => this.isAlive.has(b)).sort((a, b) => this.leads(a) - this.leads(b) || a - b)[0];
      if (to !== undefined) this.lead(i, to);
    });
    for (;;) {
      const order = [...this.alive].sort((a, b) => this.leads(b) - this.leads(a) || a - b);
      const least = order[order.length - 1] as number;
      if (this.leads(order[0] as number) < this.leads(least) + 2) return;
      let direct: { i: number; from: number } | undefined;
      for (const i of this.holds.get(least) ?? []) {
        const from = this.replicas[i]?.[0] as number;
        if (!this.isAlive.has(from) || this.leads(from) < this.leads(least) + 2) continue;
        if (!direct || this.leads(from) > this.leads(direct.from) || (this.leads(from) === this.leads(direct.from) && i < direct.i)) direct = { i, from };
      }
      if (direct) {
        this.lead(direct.i, least);
        continue;
      }
      if (!this.leaderChainFromAny(order)) return;
    }
  }

  /** Tries each broker, most leaderships first; true when one handed a leadership along a chain. */
  private leaderChainFromAny(order: readonly number[]): boolean {
    const least = Math.min(...this.alive.map((b) => this.leads(b)));
    const stuck = new Set<number>();
    for (const o of order) {
      if (this.leads(o) < least + 2) return false;
      if (stuck.has(o)) continue;
      const found = this.leaderChain(o, this.leads(o) - 2);
      if (found.chain) {
        for (const { to, i } of found.chain) this.lead(i, to);
        return true;
      }
      // Brokers o reaches reach nothing further; those leading no more than o cannot do better.
      for (const x of found.reached) if (this.leads(x) <= this.leads(o)) stuck.add(x);
    }
    return false;
  }

  private leaderChain(o: number, most: number): { chain?: { from: number; to: number; i: number }[]; reached: Set<number> } {
    const reached = new Set([o]);
    const via = new Map<number, { from: number; i: number }>();
    let frontier = [o];
    while (frontier.length > 0) {
      const next: number[] = [];
      for (const x of frontier) {
        for (const i of this.ledBy.get(x) ?? []) {
          for (const y of this.replicas[i] as number[]) {
            if (reached.has(y) || !this.isAlive.has(y)) continue;
            reached.add(y);
            via.set(y, { from: x, i });
            next.push(y);
          }
        }
      }
      const end = next.filter((y) => this.leads(y) <= most).sort((a, b) => this.leads(a) - this.leads(b) || a - b)[0];
      if (end !== undefined) {
        const chain: { from: number; to: number; i: number }[] = [];
        for (let y = end; y !== o;) {
          const step = via.get(y) as { from: number; i: number };
          chain.push({ from: step.from, to: y, i: step.i });
          y = step.from;
        }
        return { chain, reached };
      }
      frontier = next;
    }
    return { reached };
  }

  /**
   * The partition on o to give u: rack spread kept; then its preferred leadership moving along only
   * when o leads at least two more than u (goal 3); then the bytes that bring both nearest the mean,
   * if their remaining moves each carried as much (goal 4); then the first.
   */
  private pickPartition(o: number, u: number): { i: number; j: number } | undefined {
    const want = ((this.meanBytes - this.bytesOf(u)) / Math.max(1, this.floor + Math.sign(this.extra) - this.count(u))
      + (this.bytesOf(o) - this.meanBytes) / Math.max(1, this.count(o) - this.floor)) / 2;
    const leaderMoves = this.leads(o) > this.leads(u) + 1;
    const sameRack = this.rackOf(o) === this.rackOf(u);
    let best: { i: number; j: number; misfit: number; off: number } | undefined;
    for (const i of this.holds.get(o) ?? []) {
      const rs = this.replicas[i] as number[];
      if (rs.includes(u)) continue;
      const j = rs.indexOf(o);
      const misfit = (j === 0) === leaderMoves ? 0 : 1;
      const off = Math.abs(want - (this.partitions[i]?.bytes ?? 0));
      if (best && (misfit > best.misfit || (misfit === best.misfit && (off > best.off || (off === best.off && i > best.i))))) continue;
      if (!sameRack && this.spreadWith(rs, j, u) < this.spread(rs)) continue;
      best = { i, j, misfit, off };
    }
    return best;
  }

  /** Best destination: most rack spread, then fewest replicas, then fewest bytes, then lowest id. */
  private rank(candidates: { u: number; spread: number }[]): { u: number } | undefined {
    return candidates.sort((a, b) => b.spread - a.spread || this.count(a.u) - this.count(b.u) || this.bytesOf(a.u) - this.bytesOf(b.u) || a.u - b.u)[0];
  }

  /** The replica at position j moves to u, which takes its place in the list. */
  private move(i: number, j: number, u: number): void {
    const rs = this.replicas[i] as number[];
    const o = rs[j] as number;
    for (const b of rs) this.version.set(b, (this.version.get(b) ?? 0) + 1);
    if (this.isAlive.has(o)) this.remove(o, i);
    if (j === 0) {
      this.ledBy.get(o)?.delete(i);
      this.ledBy.get(u)?.add(i);
    }
    rs[j] = u;
    this.add(u, i);
    this.version.set(u, (this.version.get(u) ?? 0) + 1);
    const from = this.partitions[i]?.replicas ?? [];
    this.moves += (from.includes(u) ? 0 : 1) - (from.includes(o) ? 0 : 1);
  }

  /** Broker b becomes partition i's preferred leader, trading places with the one that was. */
  private lead(i: number, b: number): void {
    const rs = this.replicas[i] as number[];
    const j = rs.indexOf(b);
    this.ledBy.get(rs[0] as number)?.delete(i);
    this.ledBy.get(b)?.add(i);
    [rs[0], rs[j]] = [b, rs[0] as number];
  }

  private add(b: number, i: number): void {
    this.holds.get(b)?.add(i);
    this.bytes.set(b, this.bytesOf(b) + (this.partitions[i]?.bytes ?? 0));
  }

  private remove(b: number, i: number): void {
    this.holds.get(b)?.delete(i);
    this.bytes.set(b, this.bytesOf(b) - (this.partitions[i]?.bytes ?? 0));
  }

  private count(b: number): number { return this.holds.get(b)?.size ?? 0; }
  private bytesOf(b: number): number { return this.bytes.get(b) ?? 0; }
  private leads(b: number): number { return this.ledBy.get(b)?.size ?? 0; }
  private rackOf(b: number): string { return this.rack.get(b) ?? ''; }
  private spread(rs: readonly number[]): number { return this.spreadWith(rs, -1, -1); }

  /** Distinct racks of rs with position j's broker replaced by u (j = -1: as it is); replica lists are short. */
  private spreadWith(rs: readonly number[], j: number, u: number): number {
    const racks: string[] = [];
    rs.forEach((b, k) => {
      const r = this.rackOf(k === j ? u : b);
      if (!racks.includes(r)) racks.push(r);
    });
    return racks.length;
  }

  /** The most racks the partition can span: its fixed (fenced) replicas' racks, plus one alive rack each for the rest. */
  private maxSpread(rs: readonly number[]): number {
    const fixed = rs.filter((b) => !this.isAlive.has(b) && !this.decommissioning.has(b));
    const fixedRacks = new Set(fixed.map((b) => this.rackOf(b)));
    const free = [...this.aliveRacks].filter((r) => !fixedRacks.has(r)).length;
    return fixedRacks.size + Math.min(rs.length - fixed.length, free);
  }
}
