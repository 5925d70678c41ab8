/**
 * Which Lambda functions push subscriptions may deliver to: the deployment's allow-list
 * (`TRIBUTARY_PUSH_LAMBDA_TARGETS`, from the construct's `pushLambdaTargets` and
 * `grantPushTarget`), which the deliverer's IAM role mirrors. Without it, whoever may create a
 * subscription could have the deliverer invoke any function its role reaches (a confused deputy).
 * Pure: the CDK construct validates its prop with the same rules.
 *
 * An entry is a function ARN, allowing that ARN exactly (a qualified one, `…:function:f:live`,
 * allows only that alias or version), or an ARN prefix ending in `*`, allowing every ARN it
 * prefixes (`…:function:billing-*`) — as IAM reads the same string as a resource.
 */

/** A function ARN, unqualified or with a version or alias. */
export const LAMBDA_ARN = /^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[a-zA-Z0-9-_]+(:[a-zA-Z0-9-_$]+)?$/;
/** An allow-list entry: a function ARN, or a prefix of one that names at least the account and ends in `*`. */
export const LAMBDA_TARGET_ENTRY = /^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:([a-zA-Z0-9-_]+(:[a-zA-Z0-9-_$]+)?|[a-zA-Z0-9-_]*\*|[a-zA-Z0-9-_]+:[a-zA-Z0-9-_$]*\*)$/;

/** The entries of the variable's value (separated by commas; blanks ignored). */
export function parseLambdaTargets(raw: string | undefined): string[] {
  return (raw ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
}

/** Whether `arn` is one of `entries` allows. */
export function lambdaTargetAllowed(arn: string, entries: readonly string[]): boolean {
  return entries.some((e) => (e.endsWith('*') ? arn.startsWith(e.slice(0, -1)) : arn === e));
}
