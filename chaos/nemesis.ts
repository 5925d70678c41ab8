/**
 * The nemesis: a seeded schedule of real faults, one at a time — SIGKILL and restart a broker's
 * store (with its data, or empty), SIGSTOP a broker store or a controller past its timeout, kill
 * a gateway process mid-request, network faults through a broker's proxy; faults aimed at
 * replication: a leader's store killed right after it acknowledged an acks=all write, a copier paused
 * mid-replication and resumed after the others moved on, stream batches the replicator never
 * gets; and faults that reshape the cluster through its admin API (chaos/reshape.ts): a broker
 * added and removed again, a broker removed for good, a partition reassigned. Two cost records by
 * design, and say which: an unclean election (an out-of-sync replica made leader of the partition
 * whose topic allows it; the records above its log end go) and a DeleteRecords. Every fault acts on a
 * process by its pid (through the supervisor) or on the cluster's shape, and goes to the history;
 * after each one the run holds a quiet phase (no writes) to judge liveness.
 *
 * The schedule is a pure function of the nemesis's generator ({@link planFault}): every fault
 * draws the same numbers whatever its kind, so cluster state and request timing change how a fault
 * plays out (its pid, which broker leads), never which faults come next.
 */
import type { FaultProxy } from '../local/fault-proxy.js';
import type { LocalStack } from '../local/stack.js';
import type { Deletion, FaultEvent, TP, UncleanCut } from './history.js';
import type { Recorder } from './recorder.js';
import { Reshaper, type ShapeControls } from './reshape.js';
import { planFault, type FaultKind, type PlannedFault } from './faults.js';

/** What the nemesis needs of the running cluster and workload beyond its processes. */
export interface NemesisControls extends ShapeControls {
  /** Whether every partition has its full ISR (an empty restart waits for that, so two never stack up). */
  healthy(): Promise<boolean>;
  /** The partition's leader, leader epoch, ISR and replicas as the metadata says now. */
  leaderOf(tp: TP): Promise<{ leader: number; epoch: number; isr: readonly number[]; replicas: readonly number[] } | undefined>;
  /** Broker `broker`'s log end when it began to lead `tp` under `epoch` (read from its store). */
  electedLogEnd(tp: TP, broker: number, epoch: number): Promise<number | undefined>;
  /**
   * Sends a DeleteRecords for `tp` at `fraction` of the way from its log start to its high
   * watermark. `deletion`: what it may have deleted (none when it was refused with a 4xx).
   */
  deleteRecords(tp: TP, fraction: number): Promise<{ deletion?: Omit<Deletion, 'topic' | 'partition'>; detail: string }>;
  /**
   * Resolves when the workload next sends (`sent`) or gets acknowledged (`acked`) an acks=all write
   * to `tp` — through gateway `gateway` (an index into the run's gateways) if given — or with
   * undefined after `timeoutMs`.
   */
  nextWrite(w: { phase: 'sent' | 'acked'; tp: TP; gateway?: number }, timeoutMs: number): Promise<{ value: string; offset?: number } | undefined>;
  /** The controller process holding the lease, if one says so. */
  leaseHolder(): Promise<string | undefined>;
  /** Starts dropping every stream delivery (the replicator never sees them) until the quiet phase's clock starts. */
  dropDeliveries(): void;
  /** Deliveries dropped so far in the run. */
  droppedDeliveries(): number;
  /** SIGKILLs one of the function's instances that is running an invocation (`pick` in [0, 1) chooses); its pid, or undefined when none was. */
  killFunctionInstance(fn: string, pick: number): Promise<number | undefined>;
  /** The quiet phase after a fault: no writes, and a wait until everything acknowledged is readable (bounded). */
  quiet?(fault: FaultEvent): Promise<void>;
}

export interface NemesisOptions {
  readonly random: () => number;
  readonly kinds: readonly FaultKind[];
  readonly brokers: readonly number[];
  readonly controllers: readonly string[];
  /** Gateway process names; producers of the copier gateway (`gateways[1]`) are the ones `pause-copier` catches mid-write. */
  readonly gateways: readonly string[];
  /** The partitions the workload writes. */
  readonly partitions: readonly TP[];
  /** The partition whose topic allows unclean election (unclean-election's target), if any. */
  readonly unclean?: TP;
  readonly proxies: ReadonlyMap<number, FaultProxy>;
  /** How long a fault lasts (ms), and the time between faults. */
  readonly holdMs: readonly [number, number];
  readonly gapMs: readonly [number, number];
  /** How long a broker store must be down or paused to be fenced, and a controller paused to lose its lease. */
  readonly outlastSessionMs: number;
  readonly outlastLeaseMs: number;
  readonly controls: NemesisControls;
  /** Timing of the steps inside a fault (tests shrink them). */
  readonly steps?: Partial<Steps>;
}

export interface Steps {
  /** How long a killed gateway stays down (ms, from and to). @default [500, 2000] */
  readonly gatewayDownMs: readonly [number, number];
  /** pause-copier (gateway): the pause lands up to this long after the write was sent — within its append and copy. @default 40 */
  readonly copyMs: number;
  /** pause-copier (controller): the pause lands up to this long after the broker restarted — within its catch-up. @default 1500 */
  readonly catchUpMs: number;
  /** pause-copier (gateway): time for the restarted leader to rejoin before the copier resumes. @default 2000 */
  readonly rejoinMs: number;
}
const STEPS: Steps = { gatewayDownMs: [500, 2000], copyMs: 40, catchUpMs: 1500, rejoinMs: 2000 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long a planned wipe waits for every partition's full ISR before it keeps the store's data. */
const WIPE_WAIT_MS = 20_000;
/** kill-instance: the pause between two kills. */
const KILL_INSTANCE_EVERY_MS = 300;
/** How long the fault waits for the write it reacts to. */
const WRITE_WAIT_MS = 10_000;
/** unclean-election: how long a paused follower may take to leave the ISR, and the others to be replaced by it as leader. */
const OUT_OF_SYNC_WAIT_MS = 30_000;
const UNCLEAN_ELECTION_WAIT_MS = 60_000;
/** How long the elected replica's log end is asked for (its store, or the admin API, may be slow to answer under faults). */
const LOG_END_WAIT_MS = 30_000;

/** What a fault did: its target, in words, and the records it cost by design. */
interface Done {
  readonly target: string;
  readonly detail?: string;
  /** It played out as another kind (a wipe that kept the data). */
  readonly kind?: FaultKind;
  readonly cut?: UncleanCut;
  readonly deletion?: Deletion;
}

export class Nemesis {
  private running = true;
  private loop: Promise<void> | undefined;
  readonly counts: Record<string, number> = {};
  /** Of those, the faults that were applied (not recorded as `not applied: ...`). */
  readonly applied: Record<string, number> = {};
  /** Every fault planned so far, in order: the schedule the seed replays. */
  readonly planned: PlannedFault[] = [];

  private readonly steps: Steps;
  private readonly reshaper: Reshaper;

  constructor(private readonly stack: LocalStack, private readonly o: NemesisOptions, private readonly h: Recorder) {
    this.steps = { ...STEPS, ...o.steps };
    this.reshaper = new Reshaper(o.controls, o.brokers, { hold: (ms) => this.hold(ms), waitFor: (ok, ms) => this.waitFor(ok, ms) });
  }

  start(): void {
    this.loop = this.run();
  }

  /** Stops injecting and heals the fault in progress (its quiet phase runs to its end). */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** Sleeps up to `ms`, cut short when the run ends. */
  private async hold(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (this.running && Date.now() < until) await sleep(Math.min(200, until - Date.now()));
  }

  /** Polls `ok` until it holds, for up to `ms` (cut short when the run ends). */
  private async waitFor(ok: () => Promise<boolean>, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (this.running && Date.now() < until) {
      if (await ok().catch(() => false)) return true;
      await sleep(500);
    }
    return false;
  }

  private async run(): Promise<void> {
    let gapMs = planFault(this.o.random, this.o).gapMs; // the first fault's lead-in: one whole draw, so the stream stays aligned
    await this.hold(gapMs);
    while (this.running) {
      const plan = planFault(this.o.random, this.o);
      this.planned.push(plan);
      const start = Date.now();
      // A fault that cannot be applied (its process was not running, say) is recorded as such; the run goes on.
      let applied = true;
      const done = await this.inject(plan).catch((err: Error): Done => {
        applied = false;
        return { target: plan.kind, detail: `not applied: ${err.message}` };
      });
      const kind = done.kind ?? plan.kind;
      this.counts[kind] = (this.counts[kind] ?? 0) + 1;
      if (applied) this.applied[kind] = (this.applied[kind] ?? 0) + 1;
      const event = this.h.add({
        type: 'fault', kind, target: done.target, start, end: Date.now(),
        ...(done.detail ? { detail: done.detail } : {}), ...(done.cut ? { cut: done.cut } : {}), ...(done.deletion ? { deletion: done.deletion } : {}),
      }) as FaultEvent;
      await this.o.controls.quiet?.(event);
      gapMs = plan.gapMs;
      await this.hold(gapMs);
    }
  }

  /** Applies one fault, holds it, heals it. `kind` when it played out as another (a wipe that kept the data). */
  private async inject(planned: PlannedFault): Promise<Done> {
    const s = this.stack.supervisor;
    const c = this.o.controls;
    // A broker a remove-broker fault took away: the fault goes to its replacement (the schedule's
    // draws stay as they were), or is not applied when none took its place.
    const broker = this.reshaper.resolve(planned.broker);
    const usesBroker = ['kill-broker', 'wipe-broker', 'pause-broker', 'net-delay', 'net-drop', 'net-reset', 'lose-commit-answer'].includes(planned.kind) || (planned.kind === 'pause-copier' && planned.copier === 'controller');
    if (usesBroker && broker === undefined) throw new Error(`broker ${planned.broker} was removed, with no replacement`);
    const f: PlannedFault = { ...planned, broker: broker ?? planned.broker };
    const store = `broker-${f.broker}`;
    switch (f.kind) {
      case 'kill-broker':
      case 'wipe-broker': {
        let wipe = f.kind === 'wipe-broker';
        if (wipe && !(await this.waitFor(() => c.healthy(), WIPE_WAIT_MS))) wipe = false;
        const pid = s.get(store)?.pid;
        s.kill(store);
        await this.hold(f.holdMs);
        await this.stack.restart(store, { wipe });
        if (f.kind === 'wipe-broker' && !wipe) return { target: store, kind: 'kill-broker', detail: `pid ${pid}; planned wipe-broker, kept its data: the cluster had no full ISR for ${WIPE_WAIT_MS} ms` };
        return { target: store, detail: `pid ${pid}` };
      }
      case 'pause-broker': {
        const pid = s.get(store)?.pid;
        s.pause(store);
        await this.hold(Math.max(f.holdMs, this.o.outlastSessionMs));
        s.resume(store);
        return { target: store, detail: `pid ${pid}` };
      }
      case 'pause-controller': {
        const pid = s.get(f.controller)?.pid;
        s.pause(f.controller);
        await this.hold(Math.max(f.holdMs, this.o.outlastLeaseMs));
        s.resume(f.controller);
        return { target: f.controller, detail: `pid ${pid}` };
      }
      case 'kill-gateway': {
        const pid = s.get(f.gateway)?.pid;
        s.kill(f.gateway);
        const [min, max] = this.steps.gatewayDownMs;
        await this.hold(min + Math.floor(f.moment * (max - min)));
        // A gateway that fails to start again is the harness's failure, not the system's (API
        // Gateway would route to new instances): it is started again, and the run says so.
        const failures: string[] = [];
        for (;;) {
          try {
            await s.restart(f.gateway);
            break;
          } catch (err) {
            failures.push((err as Error).message.split('\n')[0] ?? '');
            if (failures.length >= 3) throw err;
          }
        }
        return { target: f.gateway, detail: `pid ${pid}${failures.length > 0 ? `; started again after ${failures.length} failed start(s): ${failures.join(' / ')}` : ''}` };
      }
      case 'net-delay':
      case 'net-drop':
      case 'net-reset': {
        const proxy = this.o.proxies.get(f.broker);
        if (!proxy) throw new Error(`${store} has no fault proxy${f.broker !== planned.broker ? ` (it replaced removed broker ${planned.broker})` : ''}`);
        proxy.set(f.kind === 'net-delay' ? { kind: 'delay', ms: 300 } : f.kind === 'net-drop' ? { kind: 'drop' } : { kind: 'reset' });
        await this.hold(f.holdMs);
        proxy.set({ kind: 'pass' });
        return { target: store, detail: f.kind };
      }
      case 'lose-commit-answer': {
        const proxy = this.o.proxies.get(f.broker);
        if (!proxy) throw new Error(`${store} has no fault proxy`);
        const before = proxy.lostAnswers;
        proxy.set({ kind: 'lose-commit-answers' });
        await this.hold(f.holdMs);
        proxy.set({ kind: 'pass' });
        return { target: store, detail: `${proxy.lostAnswers - before} group commit answers lost in ${f.holdMs} ms` };
      }
      case 'kill-instance': {
        // Busy produce instances, most of them waiting in a group commit: one killed every
        // KILL_INSTANCE_EVERY_MS while the fault holds.
        const pids: number[] = [];
        for (let i = 0, end = Date.now() + f.holdMs; Date.now() < end && this.running; i++) {
          const pid = await c.killFunctionInstance('produce', (f.moment + i * 0.618) % 1);
          if (pid !== undefined) pids.push(pid);
          await sleep(KILL_INSTANCE_EVERY_MS);
        }
        return { target: 'produce', detail: `killed ${pids.length} busy instances: ${pids.join(', ')}` };
      }
      case 'kill-leader-after-ack': return this.killLeaderAfterAck(f);
      case 'pause-copier': return f.copier === 'gateway' && this.o.gateways.length > 1 ? this.pauseGatewayCopier(f) : this.pauseControllerCopier(f);
      case 'drop-stream-batch': {
        // Dropped until the quiet phase's clock starts: the last batches before the writes stop are
        // lost for good, and only a sweep can copy what they announced.
        const before = c.droppedDeliveries();
        c.dropDeliveries();
        await this.hold(f.holdMs);
        return { target: 'stream-poller', detail: `dropping deliveries; ${c.droppedDeliveries() - before} dropped in ${f.holdMs} ms, more until the writes stop` };
      }
      case 'add-broker': return this.reshaper.addBroker(planned);
      case 'remove-broker': return this.reshaper.removeBroker(planned);
      case 'reassign': return this.reshaper.reassign(planned);
      case 'unclean-election': return this.uncleanElection(f);
      case 'delete-records': {
        const { deletion, detail } = await c.deleteRecords(f.tp, f.moment);
        return { target: `${f.tp.topic}/${f.tp.partition}`, detail, ...(deletion ? { deletion: { ...f.tp, ...deletion } } : {}) };
      }
    }
  }

  /**
   * An unclean election on the partition whose topic allows it: a follower's store is paused until
   * the follower leaves the ISR (the writes go on without it); then every other replica's store is
   * killed at once and the follower resumed — the only live replica, out of sync, it is elected.
   * After the hold the others come back and truncate to its log. The cut — its log end at the
   * election — goes to the history: the records at and above it may be lost.
   */
  private async uncleanElection(f: PlannedFault): Promise<Done> {
    const s = this.stack.supervisor;
    const c = this.o.controls;
    const tp = this.o.unclean;
    if (!tp) throw new Error('no topic allows unclean election');
    const where = `${tp.topic}/${tp.partition}`;
    const before = await c.leaderOf(tp);
    if (!before) throw new Error(`${where} has no leader`);
    const others = (b: number) => before.replicas.filter((r) => r !== b);
    const chosen = before.replicas.includes(f.broker) && f.broker !== before.leader ? f.broker : others(before.leader)[0];
    if (chosen === undefined || !s.get(`broker-${chosen}`)) throw new Error(`${where} has no follower to elect`);
    const store = `broker-${chosen}`;
    s.pause(store);
    let killedAt: number | undefined;
    let acked: { value: string; offset?: number } | undefined;
    try {
      if (!(await this.waitFor(async () => !(await c.leaderOf(tp))?.isr.includes(chosen), OUT_OF_SYNC_WAIT_MS))) {
        throw new Error(`broker ${chosen} stayed in the ISR of ${where} for ${OUT_OF_SYNC_WAIT_MS} ms`);
      }
      // Records it will lack: an acks=all write acknowledged without it, and a moment more of writes.
      acked = await c.nextWrite({ phase: 'acked', tp }, WRITE_WAIT_MS);
      await this.hold(Math.min(f.holdMs, 3000));
      killedAt = Date.now();
      for (const b of others(chosen)) s.kill(`broker-${b}`);
    } finally {
      s.resume(store);
    }
    let elected: { epoch: number } | undefined;
    await this.waitFor(async () => {
      const p = await c.leaderOf(tp);
      if (p?.leader === chosen && p.epoch > before.epoch) elected = p;
      return elected !== undefined;
    }, UNCLEAN_ELECTION_WAIT_MS);
    const electedAt = Date.now();
    let offset: number | undefined;
    let unread = '';
    if (elected) {
      const { epoch } = elected;
      await this.waitFor(async () => {
        offset = await c.electedLogEnd(tp, chosen, epoch).catch((err: unknown) => {
          unread = `: ${(err as Error).message}`;
          return undefined;
        });
        return offset !== undefined;
      }, LOG_END_WAIT_MS);
    }
    await this.hold(f.holdMs);
    for (const b of others(chosen)) await this.stack.restart(`broker-${b}`);
    const killed = others(chosen).map((b) => `broker-${b}`).join(', ');
    if (!elected) {
      // (never seen leading: nothing was elected uncleanly, so no record may be lost)
      return { target: store, detail: `${killed} killed; broker ${chosen} was not seen leading ${where} within ${UNCLEAN_ELECTION_WAIT_MS} ms` };
    }
    if (offset === undefined) {
      // (no cut: the checker reports whatever the election lost, and this says why)
      return { target: store, detail: `${killed} killed; broker ${chosen} elected leader of ${where} in epoch ${elected.epoch}, but its log end could not be read within ${LOG_END_WAIT_MS} ms${unread}` };
    }
    return {
      target: store, detail: `out of the ISR of ${where}${acked ? ` ("${acked.value}" acknowledged without it at offset ${acked.offset})` : ''}, elected leader in epoch ${elected.epoch} with log end ${offset} after ${killed} were killed`,
      cut: { ...tp, offset, leaderEpoch: elected.epoch, killedAt: killedAt!, electedAt },
    };
  }

  /** The leader's store SIGKILLed the moment an acks=all write to the partition comes back acknowledged. */
  private async killLeaderAfterAck(f: PlannedFault): Promise<{ target: string; detail?: string }> {
    const s = this.stack.supervisor;
    const c = this.o.controls;
    const tp = `${f.tp.topic}/${f.tp.partition}`;
    const leader = await c.leaderOf(f.tp).catch(() => undefined);
    if (!leader) return { target: tp, detail: 'no leader to kill' };
    const store = `broker-${leader.leader}`;
    const acked = await c.nextWrite({ phase: 'acked', tp: f.tp }, WRITE_WAIT_MS);
    const pid = s.get(store)?.pid;
    s.kill(store);
    const after = acked ? `right after "${acked.value}" was acknowledged at offset ${acked.offset}` : `no acks=all write acknowledged within ${WRITE_WAIT_MS} ms`;
    // Down past the session timeout, so the controller fails the partition over.
    await this.hold(Math.max(f.holdMs, this.o.outlastSessionMs));
    await this.stack.restart(store);
    return { target: store, detail: `pid ${pid}, leader of ${tp} in epoch ${leader.epoch}, killed ${after}` };
  }

  /**
   * A gateway paused while it copies an acks=all write to the followers; meanwhile the partition's
   * leader dies and the cluster fails over, and writes go on through the other gateway; then it
   * resumes, holding what it read before the others moved on.
   */
  private async pauseGatewayCopier(f: PlannedFault): Promise<{ target: string; detail?: string }> {
    const s = this.stack.supervisor;
    const c = this.o.controls;
    const gateway = this.o.gateways[1] as string;
    const tp = `${f.tp.topic}/${f.tp.partition}`;
    const leader = await c.leaderOf(f.tp).catch(() => undefined);
    const sent = await c.nextWrite({ phase: 'sent', tp: f.tp, gateway: 1 }, WRITE_WAIT_MS);
    const delay = Math.floor(f.moment * this.steps.copyMs);
    await sleep(delay); // within the append and the copy
    const pid = s.get(gateway)?.pid;
    s.pause(gateway);
    const store = leader ? `broker-${leader.leader}` : undefined;
    if (store) s.kill(store);
    await this.hold(Math.max(f.holdMs, this.o.outlastSessionMs));
    if (store) await this.stack.restart(store);
    await this.hold(this.steps.rejoinMs); // the restarted store rejoins; writes go on
    s.resume(gateway);
    const during = sent ? `paused ${delay} ms after it sent "${sent.value}" to ${tp}` : `paused with no acks=all write to ${tp} sent within ${WRITE_WAIT_MS} ms`;
    return { target: gateway, detail: `pid ${pid}, ${during}; ${store ? `${store} (leader in epoch ${leader!.epoch}) killed and restarted meanwhile` : 'no leader found'}` };
  }

  /**
   * A broker's store killed and restarted, and the controller holding the lease paused while it
   * catches that broker up; the other controller takes over and carries on; then it resumes.
   */
  private async pauseControllerCopier(f: PlannedFault): Promise<{ target: string; detail?: string }> {
    const s = this.stack.supervisor;
    const store = `broker-${f.broker}`;
    s.kill(store);
    await this.hold(Math.max(f.holdMs, this.o.outlastSessionMs)); // fenced, so it is caught up on return
    await this.stack.restart(store);
    const delay = Math.floor(f.moment * this.steps.catchUpMs);
    await sleep(delay); // the next ticks unfence it and start catching it up
    const holder = (await this.o.controls.leaseHolder().catch(() => undefined)) ?? f.controller;
    const pid = s.get(holder)?.pid;
    s.pause(holder);
    await this.hold(Math.max(f.holdMs, this.o.outlastLeaseMs + 2000));
    s.resume(holder);
    return { target: holder, detail: `pid ${pid}, paused ${delay} ms after ${store} restarted (killed for its session timeout)` };
  }
}
