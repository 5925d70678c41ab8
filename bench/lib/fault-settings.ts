/**
 * The fault tests' settings (test/integration/faults.test.ts), put in the environment before the
 * local stack's modules are evaluated and its processes inherit it: a benchmark that measures
 * failover imports this module first, before ./env.js (whose defaults then leave these alone).
 * Logs default to silent: the run kills stores on purpose, and what the brokers log about it is expected.
 */
/** broker.session.timeout.ms: how long a broker that stopped answering keeps its partitions. */
export const SESSION_MS = 4000;
/** The controller's tick. */
export const TICK_MS = 500;

process.env.LOG_LEVEL ??= 'silent';
Object.assign(process.env, {
  TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: String(SESSION_MS), TRIBUTARY_CONTROLLER_TICK_MS: String(TICK_MS),
  TRIBUTARY_BROKER_PROBE_TIMEOUT_MS: '1500', TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: '2000',
  TRIBUTARY_REQUEST_TIMEOUT_MS: '15000', TRIBUTARY_STORE_TIMEOUT_MS: '2000',
});
