/**
 * The replication throttle (Kafka's `leader.replication.throttled.rate` and
 * `follower.replication.throttled.rate`, cluster configs): what copying to replicas that a
 * reassignment adds may use, so that moves do not starve producers. One pace per process (in AWS
 * the controller's sweep does the copying, so it is the cluster's); the ISR's replication never
 * waits on it. A copy is paced after it is made: its bytes push the time the next may start.
 */
import { clusterConfigs } from '../cluster/metadata.js';

let freeAt = 0;

/** Waits (at most until `deadline`) as long as `bytes` take at the throttled rate, after what this process copied before. */
export async function paceReassignment(bytes: number, deadline: number): Promise<void> {
  if (bytes <= 0) return;
  const cfg = await clusterConfigs();
  const rate = Math.min(cfg['follower.replication.throttled.rate'], cfg['leader.replication.throttled.rate']);
  const now = Date.now();
  freeAt = Math.max(now, freeAt) + (bytes / rate) * 1000;
  const wait = Math.min(freeAt, deadline) - now;
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}
