/**
 * The embedded local stack (docs/architecture.md, "The local stack"): DynamoDB Local for the
 * coordination table and the brokers' replica tables (one shared process, or one per broker with
 * `isolatedBrokers`), s3rver, the tables and bucket from the same definitions the CDK deploys, the
 * cluster bootstrap, and the gateway serving the Lambda handlers. `npm start` and the test suite
 * both run this.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootstrapCluster } from '../lib/cluster/bootstrap.js';
import { invalidateMetadata } from '../lib/cluster/metadata.js';
import { resetConfig } from '../lib/config.js';
import { buildConsole, type BuiltConsole } from '../build/console.js';
import { ENVIRONMENT } from '../lib/config.js';
import { CONTROLLER_WAKE_PATTERN, FUNCTIONS, REPLICA_STREAM_PATTERN, type HttpFunctionName } from '../lib/functions/catalog.js';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { changesOf, handOffToSweep } from '../lib/log/replicator.js';
import type { HttpHandler } from '../lib/http/handler.js';
import { logger } from '../lib/logger.js';
import { dropTables, ensureTable } from '../lib/storage/admin.js';
import { resetClients } from '../lib/storage/clients.js';
import { STAGE_EXPIRATION_DAYS } from '../lib/storage/model.js';
import { expireStageObjects } from '../lib/storage/objects.js';
import { coordinationTableSpec, replicaTableSpec, DEFAULT_TABLE_PREFIX, type TableSpec } from '../lib/storage/tables.js';
import { ADMIN_PRINCIPAL, CredentialStore, ensureCredentials } from './credentials.js';
import { lambdaContext, startGateway, type ControlResponse, type Gateway } from './gateway.js';
import { LambdaRuntime, httpApiGateway, type InvokeResult, type LambdaRuntimeOptions } from './lambda-runtime.js';
import { startWebSocketApi, WEBSOCKET_PATH, type WebSocketFunction } from './websocket-api.js';
import { StreamPoller } from './stream-poller.js';
import { resetStreamClients } from '../lib/storage/streams.js';
import { LocalStackError, ProcessSupervisor, assertPortFree, checkJava, killStale, type ProcessInfo, type ProcessSpec } from './processes.js';

export interface LocalStackOptions {
  /** Gateway port; 0 picks a free one. @default 8080 */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** Number of brokers, each with its own replica table. @default 3 */
  readonly brokers?: number;
  /** One DynamoDB Local process per broker (so a broker can really be killed). @default false */
  readonly isolatedBrokers?: boolean;
  /** Where state lives; survives restarts. @default a fresh temporary directory, removed on stop */
  readonly dataDir?: string;
  /** Keep DynamoDB data in memory only (faster; a restarted store comes back empty). @default false */
  readonly inMemory?: boolean;
  /** Rack of each broker, by position (Kafka's broker.rack). @default none */
  readonly racks?: readonly string[];
  /** @default 'tributary' */
  readonly tablePrefix?: string;
  /**
   * A DynamoDB Local that is already running, to hold every table instead of a store process of
   * the stack's own (the test suite reuses one per test worker: a JVM costs about 2 s of CPU to
   * start). The stack's tables go under `tablePrefix`, which must be its own in that store, and are
   * deleted on stop. Not with `isolatedBrokers`.
   */
  readonly dynamodbEndpoint?: string;
  /** Controller loops contending for the lease, each its own process. @default 2, or 0 with `lambda` */
  readonly controllers?: number;
  /** Clock offsets of the controller loops, by position (fault tests skew them). @default none */
  readonly controllerClockSkewMs?: readonly number[];
  /**
   * Run the stream poller that feeds the replicator (Lambda's event source mapping). Tests that
   * drive an interleaving step by step turn it off, so nothing copies behind their back.
   * @default true
   */
  readonly replicator?: boolean;
  /** Fault harness: a stream batch for which this returns true never reaches the replicator (a lost event). */
  readonly dropDelivery?: () => boolean;
  /** The WebSocket API's idle timeout and connection lifetime (default API Gateway's: 10 minutes, 2 hours), and Lambda's waits before retrying a failed wake (one and two minutes). */
  readonly websocketLimits?: { readonly idleTimeoutMs?: number; readonly maxLifetimeMs?: number; readonly asyncRetryDelaysMs?: readonly number[] };
  /**
   * Lambda-fidelity mode (local/lambda-runtime.ts): every function runs from its deployed
   * bundle in worker processes, frozen between invocations, with Lambda's concurrency, timeouts
   * and payload limits, and API Gateway's answers when Lambda fails. Off: the handlers run in
   * this process (faster to start, and benchmarks can trace their store calls).
   * @default false
   */
  readonly lambda?: boolean | Omit<LambdaRuntimeOptions, 'functions' | 'env'>;
  /**
   * With `lambda`: invoke the controller function this often, as the deployment's schedule does
   * (once a minute in AWS); 0 never. The controller runs either as loop processes (`controllers`,
   * which the fault harness pauses and kills) or as this scheduled function, not both.
   * @default 2000 with `lambda` and no controller processes, else 0
   */
  readonly controllerScheduleMs?: number;
  /**
   * `--auth`: every API route needs `Authorization: Bearer <token>` of a user in
   * `<data-dir>/credentials.json` (created with `User:admin`, a super user, when absent; re-read
   * within 2 s of a change), and the functions run with `TRIBUTARY_AUTH=token` and
   * `TRIBUTARY_SUPER_USERS=User:admin`, so ACLs are enforced (local/credentials.ts).
   * @default false: open on `host`, every caller `User:ANONYMOUS`, nothing enforced
   */
  readonly auth?: boolean;
}

/** The state file's shape (`<data-dir>/local.json`). */
export interface LocalState {
  readonly url: string;
  readonly gateway: { readonly pid: number; readonly port: number };
  readonly dataDir: string;
  readonly clusterId: string;
  readonly brokers: readonly { readonly brokerId: number; readonly store: string; readonly replicaTable: string; readonly rack: string | null }[];
  readonly processes: readonly ProcessInfo[];
}

export const BUCKET = 'tributary-local';
const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');
const MAX_BROKERS = 64;
const DAY_MS = 24 * 60 * 60_000;
/** How often the stack applies the stage bucket's lifecycle rule (S3 applies it about daily). */
const STAGE_EXPIRY_EVERY_MS = 60 * 60_000;
/** The store connect timeout of the stack's functions (why: where `env` sets it). */
const LOCAL_CONNECT_TIMEOUT_MS = 2_500;


export interface LocalStack {
  readonly url: string;
  /** The console's page: `<url>/ui/`. */
  readonly consoleUrl: string;
  /**
   * The console as built at start into `<data-dir>/console` (in-process mode); with `lambda`,
   * the console function's bundle carries its own build (build/functions.ts) and this is undefined.
   */
  readonly console: BuiltConsole | undefined;
  readonly dataDir: string;
  readonly stateFile: string;
  readonly clusterId: string;
  readonly supervisor: ProcessSupervisor;
  /** The environment the handlers run with (for tools and tests that call lib/ directly). */
  readonly env: Readonly<Record<string, string>>;
  /** With `auth`: the users' file (`<data-dir>/credentials.json`). */
  readonly credentialsFile?: string;
  /** Restarts a child process (optionally empty) and re-creates its tables — what the control API's restart does. */
  restart(name: string, opts?: { wipe?: boolean }): Promise<ProcessInfo>;
  stop(): Promise<void>;
}

function prepareDataDir(dir: string | undefined): { dir: string; temporary: boolean } {
  if (!dir) return { dir: fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-')), temporary: true };
  const abs = path.resolve(dir);
  try {
    fs.mkdirSync(abs, { recursive: true });
    fs.accessSync(abs, fs.constants.W_OK);
    if (!fs.statSync(abs).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new LocalStackError(`The data directory ${abs} cannot be used: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`);
  }
  return { dir: abs, temporary: false };
}

function previousPids(stateFile: string): number[] {
  if (!fs.existsSync(stateFile)) return [];
  try {
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as Partial<LocalState>;
    return (state.processes ?? []).flatMap((p) => (typeof p.pid === 'number' ? [p.pid] : []));
  } catch {
    throw new LocalStackError(`The state file ${stateFile} is not valid JSON; remove it (it is rewritten at start) or choose another --data-dir.`);
  }
}

export async function startLocalStack(o: LocalStackOptions = {}): Promise<LocalStack> {
  const brokerCount = o.brokers ?? 3;
  if (!Number.isInteger(brokerCount) || brokerCount < 1 || brokerCount > MAX_BROKERS) {
    throw new LocalStackError(`--brokers must be an integer from 1 to ${MAX_BROKERS}, got ${o.brokers}.`);
  }
  const host = o.host ?? '127.0.0.1';
  const port = o.port ?? 8080;
  const prefix = o.tablePrefix ?? DEFAULT_TABLE_PREFIX;
  if (o.dynamodbEndpoint !== undefined && o.isolatedBrokers) {
    throw new LocalStackError('A stack with isolated brokers starts a store per broker; it cannot use a running DynamoDB Local (dynamodbEndpoint).');
  }
  const { dir, temporary } = prepareDataDir(o.dataDir);
  const stateFile = path.join(dir, 'local.json');
  killStale(previousPids(stateFile));
  await checkJava();
  if (port !== 0) await assertPortFree(port, 'stop what holds it or choose another with --port or PORT.');

  const supervisor = new ProcessSupervisor({ onChange: () => writeState() });
  const storeDir = (name: string) => (o.inMemory ? null : path.join(dir, 'dynamodb', name));
  const logFile = (name: string) => path.join(dir, 'logs', `${name}.log`);
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });

  // Which process holds which tables.
  const coordinationStore = o.isolatedBrokers ? 'coordination' : 'dynamodb';
  const brokerStore = (id: number) => (o.isolatedBrokers ? `broker-${id}` : 'dynamodb');
  const specs: ProcessSpec[] = [
    ...(o.dynamodbEndpoint === undefined
      ? [{ name: coordinationStore, role: o.isolatedBrokers ? 'coordination store' : 'coordination and broker stores', kind: 'dynamodb', dataDir: storeDir(coordinationStore), logFile: logFile(coordinationStore) } satisfies ProcessSpec]
      : []),
    ...(o.isolatedBrokers
      ? Array.from({ length: brokerCount }, (_, i): ProcessSpec => ({
        name: `broker-${i + 1}`, role: `broker ${i + 1} store`, kind: 'dynamodb', dataDir: storeDir(`broker-${i + 1}`), logFile: logFile(`broker-${i + 1}`),
      }))
      : []),
    { name: 's3', role: 'S3', kind: 's3', dataDir: path.join(dir, 's3'), bucket: BUCKET, logFile: logFile('s3') },
  ];
  const tablesOf = new Map<string, TableSpec[]>();
  const addTable = (store: string, t: TableSpec) => tablesOf.set(store, [...(tablesOf.get(store) ?? []), t]);
  addTable(coordinationStore, coordinationTableSpec(prefix));
  for (let id = 1; id <= brokerCount; id++) addTable(brokerStore(id), replicaTableSpec(id, prefix));

  let gateway: Gateway | undefined;
  let clusterId = '';
  const brokers: LocalState['brokers'][number][] = Array.from({ length: brokerCount }, (_, i) => ({
    brokerId: i + 1, store: brokerStore(i + 1), replicaTable: replicaTableSpec(i + 1, prefix).name, rack: o.racks?.[i] ?? null,
  }));
  function writeState(): void {
    if (!gateway) return;
    const state: LocalState = {
      url: gateway.url, gateway: { pid: process.pid, port: gateway.port }, dataDir: dir, clusterId, brokers, processes: supervisor.list(),
    };
    fs.writeFileSync(stateFile, JSON.stringify(state, null, 2) + '\n');
  }

  let poller: StreamPoller | undefined;
  let wakePoller: StreamPoller | undefined;
  let runtime: LambdaRuntime | undefined;
  let schedule: NodeJS.Timeout | undefined;
  let stageExpiry: NodeJS.Timeout | undefined;
  const scheduled = new Set<Promise<unknown>>();
  let credentials: CredentialStore | undefined;
  let builtConsole: BuiltConsole | undefined;
  let restartProcess: LocalStack['restart'] = async () => {
    throw new LocalStackError('The local stack is not running.');
  };
  const stop = async (): Promise<void> => {
    clearInterval(schedule);
    clearInterval(stageExpiry);
    credentials?.close();
    await gateway?.close();
    await poller?.stop();
    await wakePoller?.stop();
    // (ends every environment: invocations still running, a controller pass say, settle as failed)
    await runtime?.stop();
    await Promise.all(scheduled);
    await supervisor.stopAll();
    if (o.dynamodbEndpoint !== undefined) await dropTables(o.dynamodbEndpoint, [...tablesOf.values()].flat());
    resetClients();
    resetStreamClients();
    if (temporary) fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    await Promise.all(specs.map((s) => supervisor.start(s)));
    const endpoint = (name: string) =>
      (name === coordinationStore && o.dynamodbEndpoint !== undefined ? o.dynamodbEndpoint : supervisor.get(name)?.endpoint) as string;
    const env: Record<string, string> = {
      TRIBUTARY_COORDINATION_TABLE: coordinationTableSpec(prefix).name,
      TRIBUTARY_BUCKET: BUCKET,
      TRIBUTARY_S3_FORCE_PATH_STYLE: 'true',
      AWS_ENDPOINT_URL_DYNAMODB: endpoint(coordinationStore),
      AWS_ENDPOINT_URL_S3: endpoint('s3'),
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
      // DynamoDB Local's accept queue holds 50 connections (Java's default). When more arrive at
      // once — a burst of new function environments — the kernel drops their SYNs and sends them
      // again after 1 s, just when a 1 s connect timeout gives up: wait for that second SYN.
      TRIBUTARY_STORE_CONNECT_TIMEOUT_MS: process.env.TRIBUTARY_STORE_CONNECT_TIMEOUT_MS ?? String(LOCAL_CONNECT_TIMEOUT_MS),
      // s3rver accepts only these; DynamoDB Local (-sharedDb) accepts anything.
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
    if (o.auth) {
      credentials = new CredentialStore(ensureCredentials(dir).file, logger).watch();
      env.TRIBUTARY_AUTH = 'token';
      env.TRIBUTARY_SUPER_USERS = ADMIN_PRINCIPAL;
    } else {
      // (explicitly: a stack started after an `auth` one in the same process must not inherit it)
      env.TRIBUTARY_AUTH = 'none';
    }
    // The console: built here for the in-process handler; in Lambda mode its bundle carries a build
    // beside index.mjs, as the deployed function's does ('' so no earlier stack's directory applies).
    if (!o.lambda) {
      builtConsole = await buildConsole(path.join(dir, 'console'));
      logger.info({ event: 'console-built', dir: builtConsole.outdir, ms: builtConsole.ms, bytes: builtConsole.totalBytes, gzipBytes: builtConsole.totalGzipBytes }, 'console built');
    }
    env[ENVIRONMENT.consoleDir] = builtConsole?.outdir ?? '';
    Object.assign(process.env, env);
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_PROFILE;
    resetConfig();
    resetClients();

    const ensureTables = async (store: string) => {
      for (const t of tablesOf.get(store) ?? []) await ensureTable(t, endpoint(store));
    };
    await Promise.all([...tablesOf.keys()].map(ensureTables));
    const cluster = await bootstrapCluster(brokers.map((b) => ({
      brokerId: b.brokerId, replicaTable: b.replicaTable, endpoint: endpoint(b.store), rack: b.rack,
    })));
    clusterId = cluster.clusterId;
    // The stage bucket's lifecycle rule, as S3 applies it in AWS: staged objects older than
    // STAGE_EXPIRATION_DAYS go (a data directory kept across starts gets them expired too).
    const expireStage = () => expireStageObjects(Date.now() - STAGE_EXPIRATION_DAYS * DAY_MS)
      .then((n) => { if (n > 0) logger.info({ event: 'stage-expired', objects: n }, 'expired stage objects deleted'); })
      .catch((err: unknown) => logger.warn({ event: 'stage-expiry-failed', err: (err as Error).message }, 'stage expiry failed'));
    await expireStage();
    stageExpiry = setInterval(() => void expireStage(), STAGE_EXPIRY_EVERY_MS).unref();

    /**
     * `POST /local/brokers/{id}`: a new broker's store — its own DynamoDB Local process with
     * `isolatedBrokers` — and replica table, followed by the replicator's stream poller. Idempotent.
     */
    const addBrokerStore = async (brokerId: number, rack: string | null): Promise<ControlResponse> => {
      const store = brokerStore(brokerId);
      const spec = replicaTableSpec(brokerId, prefix);
      try {
        if (o.isolatedBrokers && !supervisor.get(store)) {
          await supervisor.start({ name: store, role: `broker ${brokerId} store`, kind: 'dynamodb', dataDir: storeDir(store), logFile: logFile(store) });
        }
        if (!(tablesOf.get(store) ?? []).some((t) => t.name === spec.name)) addTable(store, spec);
        await ensureTable(spec, endpoint(store));
        if (!brokers.some((b) => b.brokerId === brokerId)) brokers.push({ brokerId, store, replicaTable: spec.name, rack });
        poller?.addTable(spec.name, endpoint(store));
        writeState();
        return { status: 200, body: { brokerId, replicaTable: spec.name, endpoint: endpoint(store), store } };
      } catch (err) {
        return { status: 500, body: { error_code: 500, message: (err as Error).message } };
      }
    };
    const afterRestart = async (name: string) => {
      await ensureTables(name);
      invalidateMetadata();
      for (const t of tablesOf.get(name) ?? []) for (const p of [poller, wakePoller]) p?.refresh(t.name, endpoint(name));
    };
    restartProcess = async (name, opts = {}) => {
      const info = await supervisor.restart(name, opts);
      await afterRestart(name);
      return info;
    };
    // The same handlers the CDK deploys, from the same catalog: in this process, or (Lambda
    // mode) from their bundles in frozen-between-invocations worker processes.
    const fidelity = o.lambda ? (o.lambda === true ? {} : o.lambda) : undefined;
    if (fidelity) {
      runtime = LambdaRuntime.start({ ...fidelity, functions: FUNCTIONS, env });
    }
    const handlers = runtime ? undefined : Object.fromEntries(await Promise.all(FUNCTIONS.map(async (f) => {
      const mod = (await import(path.join(PROJECT_ROOT, f.entry))) as { handler: unknown };
      return [f.name, mod.handler] as const;
    })));
    const replicate = handlers?.replicator as ((event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>) | undefined;
    // Lambda's event source mapping on every replica table's stream, played locally.
    poller = new StreamPoller({
      tables: brokers.map((b) => ({ table: b.replicaTable, endpoint: endpoint(b.store) })),
      deliver: async (event) => {
        if (o.dropDelivery?.()) return;
        let out: DynamoDBBatchResponse | undefined;
        if (runtime) {
          const r = await invokeUnthrottled(runtime, 'replicator', event);
          if (!r.ok) throw new Error(`the replicator failed: ${r.error} (${r.errorType}: ${r.message})`);
          out = r.payload as typeof out;
        } else {
          out = await replicate?.(event, lambdaContext('replicator'));
        }
        if (out && out.batchItemFailures.length > 0) throw new Error(`replication failed for ${out.batchItemFailures.length} partitions`);
      },
      // In AWS the event source mapping sends a given-up batch's description to the on-failure
      // queue, and the failing invocations have marked its partitions already; here they go to the
      // lag index, which the controller's sweep re-drives.
      onFailure: (event) => handOffToSweep(changesOf(event.Records)),
      filter: REPLICA_STREAM_PATTERN,
      log: logger.child({ event: 'stream-poller' }),
    });
    if (o.replicator ?? true) await poller.start();
    else poller = undefined;
    // Controller loops in their own processes (so a fault test can pause or kill one).
    const controllerProcesses = o.controllers ?? (runtime ? 0 : 2);
    await Promise.all(Array.from({ length: controllerProcesses }, (_, i) => supervisor.start({
      name: `controller-${i + 1}`, role: 'controller loop', kind: 'node', dataDir: null,
      script: 'local/controller-process.ts', args: ['--id', `controller-${i + 1}`], logFile: logFile(`controller-${i + 1}`),
      env: { TRIBUTARY_CLOCK_SKEW_MS: String(o.controllerClockSkewMs?.[i] ?? 0) },
    })));
    // The deployment's triggers of the controller function: its schedule (EventBridge, once a
    // minute in AWS), and the coordination table's stream filtered to suspect reports.
    const everyMs = o.controllerScheduleMs ?? (runtime && controllerProcesses === 0 ? 2000 : 0);
    if (runtime && everyMs > 0) {
      const rt = runtime;
      const invokeController = (event: unknown) => {
        const p = invokeUnthrottled(rt, 'controller', event).finally(() => scheduled.delete(p));
        scheduled.add(p);
        return p;
      };
      // (unlike EventBridge, no scheduled invocation starts while another controller invocation
      // runs: in AWS it would find the lease held and return; here it would cost a cold start on
      // a machine the tests share)
      schedule = setInterval(() => {
        if (scheduled.size === 0) void invokeController({ source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} });
      }, everyMs);
      const coordination = coordinationTableSpec(prefix).name;
      wakePoller = new StreamPoller({
        tables: [{ table: coordination, endpoint: endpoint(coordinationStore) }],
        filter: CONTROLLER_WAKE_PATTERN,
        batchSize: 10,
        // No retries (the event source's retryAttempts is 0): the schedule covers a lost wake.
        maxDeliveryAttempts: 1,
        onFailure: async () => undefined,
        deliver: async (event) => {
          const r = await invokeController(event);
          if (!r.ok) throw new Error(`the controller failed: ${r.error}`);
        },
        log: logger.child({ event: 'controller-wake' }),
      });
      await wakePoller.start();
    }
    const http = FUNCTIONS.filter((f) => f.trigger === 'http').map((f) => f.name as HttpFunctionName);
    // The WebSocket API's function, as API Gateway invokes it (and the wakes, as Lambda's Event invoke does).
    const websocketIn = (invoke: (r: LambdaRuntime, fn: string, e: unknown) => Promise<InvokeResult>): WebSocketFunction => (runtime
      ? async (event) => {
        const r = await invoke(runtime as LambdaRuntime, 'websocket', event);
        return r.ok ? (r.payload as { statusCode: number }) : { statusCode: 500 };
      }
      : (event) => (handlers?.websocket as (e: unknown, c: Context) => Promise<{ statusCode: number }>)(event, lambdaContext('websocket')));
    // (with --auth, the connection API and Invoke need a token only the functions are given)
    const endpointToken = credentials ? randomBytes(32).toString('base64url') : undefined;
    const websocket = startWebSocketApi({
      fn: websocketIn((r, fn, e) => r.invoke(fn, e)),
      // (an asynchronous invocation waits out a throttle in Lambda's queue)
      fnAsync: websocketIn(invokeUnthrottled),
      ...(credentials ? { authenticate: (h: string | undefined) => credentials?.authenticate(h) } : {}),
      ...(endpointToken ? { endpointToken } : {}),
      ...(o.websocketLimits ?? {}),
    });
    gateway = await startGateway({
      host, port, websocket,
      ...(runtime
        // API Gateway's own limit and answer; Lambda's 6 MB event limit is the runtime's.
        ? httpApiGateway(runtime, http)
        : {
          functions: Object.fromEntries(http.map((name) => [name, handlers?.[name]])) as Record<HttpFunctionName, HttpHandler>,
          maxRequestBytes: Number(process.env.TRIBUTARY_MAX_REQUEST_BYTES ?? 6 * 1024 * 1024),
        }),
      ...(credentials ? { authenticate: (h: string | undefined) => credentials?.authenticate(h) } : {}),
      control: (method, p, query) => {
        const m = method === 'POST' ? /^\/local\/brokers\/(\d+)$/.exec(p) : null;
        return m ? addBrokerStore(Number(m[1]), query.get('rack')) : control(supervisor, runtime, method, p, query, afterRestart);
      },
    });
    // The admin function creates a new broker's store through this stack (lib/cluster/brokers.ts);
    // the websocket function posts to its connections, and the functions that move high
    // watermarks invoke it, through the gateway (API Gateway's and Lambda's APIs, played locally).
    const local = {
      TRIBUTARY_LOCAL_CONTROL_URL: gateway.url,
      [ENVIRONMENT.websocketEndpoint]: gateway.url,
      [ENVIRONMENT.lambdaEndpoint]: gateway.url,
      ...(endpointToken ? { [ENVIRONMENT.localEndpointToken]: endpointToken } : {}),
      [ENVIRONMENT.websocketFunction]: 'websocket',
      [ENVIRONMENT.pushAllowPrivate]: 'true',
      // (no Lambda target runs locally: the allow-list is the launcher's, empty unless it names one)
      [ENVIRONMENT.pushLambdaTargets]: process.env[ENVIRONMENT.pushLambdaTargets] ?? '',
    };
    Object.assign(env, local);
    Object.assign(process.env, local);
    writeState();
    logger.info({ event: 'local-stack-ready', url: gateway.url, websocket: `${gateway.url.replace(/^http/, 'ws')}${WEBSOCKET_PATH}`, console: `${gateway.url}/ui/`, dataDir: dir, brokers: brokerCount, isolated: !!o.isolatedBrokers, lambda: !!runtime, auth: !!credentials, credentialsFile: credentials?.file }, 'local stack ready');
    return {
      url: gateway.url, consoleUrl: `${gateway.url}/ui/`, console: builtConsole, dataDir: dir, stateFile, clusterId, supervisor, env, stop, restart: (name, opts) => restartProcess(name, opts),
      ...(credentials ? { credentialsFile: credentials.file } : {}),
    };
  } catch (err) {
    await stop().catch(() => undefined);
    if (err instanceof LocalStackError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new LocalStackError(`Port ${port} is already in use; stop what holds it or choose another with --port or PORT.`);
    throw err;
  }
}

/**
 * An event source mapping's invocation: a throttle is retried (it does not count against the
 * mapping's retry attempts in AWS) until the runtime stops.
 */
async function invokeUnthrottled(runtime: LambdaRuntime, fn: string, event: unknown): Promise<InvokeResult> {
  for (let wait = 50; ; wait = Math.min(1000, wait * 2)) {
    const r = await runtime.invoke(fn, event);
    if (r.ok || r.error !== 'TooManyRequestsException' || runtime.stopped) return r;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

const OPERATIONS = ['kill', 'pause', 'resume', 'restart'] as const;

/** The `/local/processes` control API. */
async function control(
  supervisor: ProcessSupervisor,
  runtime: LambdaRuntime | undefined,
  method: string,
  p: string,
  query: URLSearchParams,
  afterRestart: (name: string) => Promise<void>,
): Promise<ControlResponse> {
  if (method === 'GET' && p === '/local/processes') return { status: 200, body: { processes: supervisor.list() } };
  if (method === 'GET' && p === '/local/lambda') {
    return runtime ? { status: 200, body: runtime.stats() } : { status: 404, body: { error_code: 404, message: 'The local stack runs without Lambda-fidelity mode (start it with --lambda).' } };
  }
  const m = /^\/local\/processes\/([^/]+)\/([a-z]+)$/.exec(p);
  const op = m?.[2] as (typeof OPERATIONS)[number] | undefined;
  if (method !== 'POST' || !m || !op || !OPERATIONS.includes(op)) {
    return { status: 404, body: { error_code: 404, message: `No local control route ${method} ${p}; try GET /local/processes or POST /local/processes/{name}/kill|pause|resume|restart.` } };
  }
  const name = decodeURIComponent(m[1] as string);
  const info = supervisor.get(name);
  if (!info) return { status: 404, body: { error_code: 404, message: `No local process named "${name}".` } };
  try {
    if (op === 'restart') {
      const wipe = query.get('wipe') === 'true';
      if (wipe && name !== 's3' && !name.startsWith('broker-')) {
        return { status: 409, body: { error_code: 409, message: `Wiping "${name}" would destroy the cluster's metadata; only broker stores (with --isolated-brokers) and s3 can be wiped.` } };
      }
      const restarted = await supervisor.restart(name, { wipe });
      await afterRestart(name);
      return { status: 200, body: restarted };
    }
    return { status: 200, body: supervisor[op](name) };
  } catch (err) {
    if (err instanceof LocalStackError) return { status: 409, body: { error_code: 409, message: err.message } };
    throw err;
  }
}
