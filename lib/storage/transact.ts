/**
 * DynamoDB transactions with Kafka-style failure reporting: a cancelled transaction becomes a
 * `ConditionFailed` that says which items failed and carries their current values (ALL_OLD), so
 * the caller can re-read nothing and retry from what it learned.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type TransactWriteCommandInput, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

export interface CancelledItem {
  readonly index: number;
  /** `ConditionalCheckFailed`, `TransactionConflict`, ... */
  readonly code: string;
  /** The item as it is now, when the condition failed and the item exists. */
  readonly current?: Record<string, unknown>;
}

export class ConditionFailed extends Error {
  override readonly name = 'ConditionFailed';
  constructor(readonly items: readonly CancelledItem[]) {
    super(`transaction cancelled: ${items.map((i) => `#${i.index} ${i.code}`).join(', ')}`);
  }
  /** The failure of the item at `index`, if it failed. */
  at(index: number): CancelledItem | undefined {
    return this.items.find((i) => i.index === index);
  }
  /** True when only transaction conflicts (no failed condition) cancelled it: retrying is safe. */
  get onlyConflicts(): boolean {
    return this.items.every((i) => i.code !== 'ConditionalCheckFailed');
  }
}

type Items = NonNullable<TransactWriteCommandInput['TransactItems']>;

/** Sets `ReturnValuesOnConditionCheckFailure: ALL_OLD` on every conditional item. */
function withOldValues(items: Items): Items {
  return items.map((item) => {
    const [kind, body] = Object.entries(item)[0] as [string, Record<string, unknown>];
    if (body.ConditionExpression === undefined) return item;
    return { [kind]: { ...body, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } } as Items[number];
  });
}

const CONFLICT_ATTEMPTS = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs one `TransactWriteItems`. A cancellation caused only by conflicts with other transactions
 * (nothing was applied) is retried with jittered exponential backoff, a few times.
 * Errors: `ConditionFailed` when a condition failed, or conflicts outlasted the retries;
 * anything else propagates.
 */
export async function transactWrite(client: DynamoDBDocumentClient, items: Items, o: { readonly conflictAttempts?: number } = {}): Promise<void> {
  const input = { TransactItems: withOldValues(items) };
  const attempts = o.conflictAttempts ?? CONFLICT_ATTEMPTS;
  for (let attempt = 1; ; attempt++) {
    try {
      await client.send(new TransactWriteCommand(input));
      return;
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const reasons = err.CancellationReasons ?? [];
      const failed = new ConditionFailed(
        reasons.flatMap((r, index) =>
          r.Code && r.Code !== 'None'
            ? [{ index, code: r.Code, ...(r.Item ? { current: unmarshall(r.Item) } : {}) }]
            : [],
        ),
      );
      if (!failed.onlyConflicts || attempt >= attempts) throw failed;
      await sleep(Math.random() * 10 * 2 ** attempt);
    }
  }
}

/** DynamoDB allows at most this many items in one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;
