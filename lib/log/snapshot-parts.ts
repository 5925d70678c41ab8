/**
 * The snapshot format (version 2): a manifest naming parts, each part a bounded run of entries,
 * so a snapshot is written and read one part at a time and never held whole in memory
 * (docs/architecture.md, "Replication"). Storage is passed in (`put`, `get`), so the same writer
 * and reader serve any snapshot source — today the table log, later S3 segments plus the table
 * tail.
 *
 *   part    => entry*
 *   entry   => headerLength:uint32 header:JSON(utf8) dataLength:int32 data:bytes
 *     header: { t: 'b', ...BatchRecord without data } | { t: 'p', ...producer state }
 *     dataLength: the batch's inline bytes, or -1 when it has none (bytes in S3, or a producer state)
 *
 * A part holds at most `partBytes`, unless one entry alone is larger (a batch above the part
 * size): that entry gets a part of its own.
 */
import type { BatchRecord, ReplicaHead, StoredProducerState } from '../storage/model.js';
import { stateFields } from './producer-state.js';

export const SNAPSHOT_FORMAT = 2;

export type SnapshotProducerState = Omit<StoredProducerState, 'ver'>;

export interface SnapshotPartRef {
  readonly key: string;
  readonly bytes: number;
  readonly batches: number;
  readonly producers: number;
}

/** Written last: a snapshot whose manifest exists is complete. */
export interface SnapshotManifest {
  readonly version: typeof SNAPSHOT_FORMAT;
  readonly tp: string;
  /** The log it holds is [head.logStartOffset, endOffset). */
  readonly endOffset: number;
  /** The leader's head when the snapshot began. */
  readonly head: ReplicaHead;
  readonly parts: readonly SnapshotPartRef[];
  readonly batches: number;
  readonly producers: number;
  readonly bytes: number;
}

/** What one part holds, decoded. */
export interface SnapshotPart {
  readonly batches: BatchRecord[];
  readonly producers: SnapshotProducerState[];
}

type Put = (key: string, body: Buffer) => Promise<void>;
type Get = (key: string, part: number) => Promise<Buffer>;

function encodeEntry(header: Record<string, unknown>, data: Uint8Array | undefined): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const out = Buffer.allocUnsafe(8 + json.length + (data?.length ?? 0));
  out.writeUInt32BE(json.length, 0);
  json.copy(out, 4);
  out.writeInt32BE(data ? data.length : -1, 4 + json.length);
  if (data) out.set(data, 8 + json.length);
  return out;
}

/** Decodes one part. Batch bytes are views into `body`, not copies. */
export function decodePart(body: Buffer): SnapshotPart {
  const part: SnapshotPart = { batches: [], producers: [] };
  for (let at = 0; at < body.length;) {
    const headerLength = body.readUInt32BE(at);
    const header = JSON.parse(body.toString('utf8', at + 4, at + 4 + headerLength)) as { t: 'b' | 'p' } & Record<string, unknown>;
    at += 4 + headerLength;
    const dataLength = body.readInt32BE(at);
    at += 4;
    const { t, ...rest } = header;
    if (t === 'b') {
      part.batches.push({ ...rest, ...(dataLength >= 0 ? { data: body.subarray(at, at + dataLength) } : {}) } as unknown as BatchRecord);
    } else if (t === 'p') {
      part.producers.push(rest as unknown as SnapshotProducerState);
    } else {
      throw new Error(`snapshot part: unknown entry type ${String(t)}`);
    }
    at += Math.max(0, dataLength);
  }
  return part;
}

/**
 * Writes entries into parts under `prefix`, each put as soon as it is full; at most one part is
 * held in memory. `finish` puts the last part and the manifest.
 */
export class SnapshotWriter {
  private readonly parts: SnapshotPartRef[] = [];
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private pendingBatches = 0;
  private pendingProducers = 0;

  constructor(
    private readonly prefix: string,
    private readonly partBytes: number,
    private readonly put: Put,
    /** Called before each part is put (its index): where a caller checks its claim, or a test injects a failure. */
    private readonly beforePut: (part: number) => Promise<void> | void = () => undefined,
  ) {}

  async addBatch(b: BatchRecord): Promise<void> {
    const { data, ...rest } = b;
    await this.add(encodeEntry({ t: 'b', ...rest }, data));
    this.pendingBatches++;
  }

  async addProducer(st: SnapshotProducerState): Promise<void> {
    // (the whole state: its open or closed transaction too, or a replica built from the snapshot
    // would take the transaction's next record for its first and move the last stable offset past it)
    await this.add(encodeEntry({ t: 'p', ...stateFields(st) }, undefined));
    this.pendingProducers++;
  }

  /** Puts the last part and then the manifest; returns the manifest's key and the manifest. */
  async finish(meta: Pick<SnapshotManifest, 'tp' | 'endOffset' | 'head'>): Promise<{ key: string; manifest: SnapshotManifest }> {
    await this.flush();
    const manifest: SnapshotManifest = {
      version: SNAPSHOT_FORMAT, ...meta, parts: this.parts,
      batches: this.parts.reduce((s, p) => s + p.batches, 0),
      producers: this.parts.reduce((s, p) => s + p.producers, 0),
      bytes: this.parts.reduce((s, p) => s + p.bytes, 0),
    };
    const key = `${this.prefix}/manifest.json`;
    await this.put(key, Buffer.from(JSON.stringify(manifest)));
    return { key, manifest };
  }

  private async add(entry: Buffer): Promise<void> {
    if (this.pendingBytes > 0 && this.pendingBytes + entry.length > this.partBytes) await this.flush();
    this.pending.push(entry);
    this.pendingBytes += entry.length;
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const index = this.parts.length;
    await this.beforePut(index);
    const key = `${this.prefix}/part-${String(index).padStart(6, '0')}`;
    const body = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    await this.put(key, body);
    this.parts.push({ key, bytes: body.length, batches: this.pendingBatches, producers: this.pendingProducers });
    this.pendingBytes = 0;
    this.pendingBatches = 0;
    this.pendingProducers = 0;
  }
}

/** Reads a manifest, refusing a format this code does not know. */
export async function readManifest(key: string, get: (key: string) => Promise<Buffer>): Promise<SnapshotManifest> {
  const manifest = JSON.parse((await get(key)).toString('utf8')) as SnapshotManifest;
  if (manifest.version !== SNAPSHOT_FORMAT) throw new Error(`snapshot ${key}: format ${String(manifest.version)}, expected ${SNAPSHOT_FORMAT}`);
  return manifest;
}

/** A snapshot's parts in order, each read (`get` with its index) only when the previous one has been consumed. */
export async function* readParts(manifest: SnapshotManifest, get: Get): AsyncGenerator<SnapshotPart & { readonly index: number }> {
  for (const [index, ref] of manifest.parts.entries()) {
    const body = await get(ref.key, index);
    if (body.length !== ref.bytes) throw new Error(`snapshot part ${ref.key}: ${body.length} bytes, expected ${ref.bytes}`);
    yield { index, ...decodePart(body) };
  }
}
