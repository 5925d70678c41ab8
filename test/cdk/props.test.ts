/** The construct's props are validated before anything is built, with messages naming the prop and the value. */
import { App, Aws, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { TributaryCluster } from '../../cdk/cluster.js';
import { resolveProps, type TributaryClusterProps } from '../../cdk/props.js';
import { clusterPropsFromContext } from '../../cdk/stack.js';

const build = (props: TributaryClusterProps) => () => new TributaryCluster(new Stack(new App(), 'S'), 'Events', props);

describe('TributaryCluster: props', () => {
  it.each([
    [{ brokers: 0 }, 'brokers must be an integer from 1 to 64 or a list of broker ids, got 0'],
    [{ brokers: 65 }, 'brokers must be an integer from 1 to 64 or a list of broker ids, got 65'],
    [{ brokers: 2.5 }, 'brokers must be an integer from 1 to 64 or a list of broker ids, got 2.5'],
    [{ brokers: Number.NaN }, 'brokers must be an integer from 1 to 64 or a list of broker ids, got NaN'],
    [{ brokers: '3' as never }, 'brokers must be an integer from 1 to 64 or a list of broker ids, got 3'],
    [{ brokers: [] }, 'brokers must list 1 to 64 broker ids, got 0'],
    [{ brokers: Array.from({ length: 65 }, (_, i) => i) }, 'brokers must list 1 to 64 broker ids, got 65'],
    [{ brokers: [1, -2] }, 'brokers[1] must be a broker id, an integer from 0 to 2147483647, got -2'],
    [{ brokers: [1.5] }, 'brokers[0] must be a broker id, an integer from 0 to 2147483647, got 1.5'],
    [{ brokers: [2 ** 31] }, 'brokers[0] must be a broker id, an integer from 0 to 2147483647, got 2147483648'],
    [{ brokers: [1, Number.NaN] }, 'brokers[1] must be a broker id, an integer from 0 to 2147483647, got NaN'],
    [{ brokers: [1, 4, 2, 4] }, 'brokers must list distinct ids: 4 appears more than once'],
    [{ brokers: [1, 2, 4], racks: ['a', 'b'] }, 'racks must have one entry per broker: got 2 racks for 3 brokers'],
    [{ brokers: [1, 2, 4], racks: ['a', 'b', ''] }, 'racks[2] (broker 4) must be a non-empty string'],
    [{ brokers: 3, racks: ['a', 'b'] }, 'racks must have one entry per broker: got 2 racks for 3 brokers'],
    [{ brokers: 2, racks: ['a', ' '] }, 'racks[1] (broker 2) must be a non-empty string'],
    [{ tablePrefix: 'bad prefix' }, 'tablePrefix must be 1 to 200 characters from [a-zA-Z0-9_.-], got "bad prefix"'],
    [{ tablePrefix: '' }, 'tablePrefix must be 1 to 200 characters from [a-zA-Z0-9_.-], got ""'],
    [{ tablePrefix: 'x'.repeat(201) }, `tablePrefix must be 1 to 200 characters from [a-zA-Z0-9_.-], got "${'x'.repeat(201)}"`],
    [{ apiType: 'websocket' as never }, "apiType must be 'http' or 'rest', got 'websocket'"],
    [{ authorization: 'cognito' as never }, "authorization must be 'iam' or 'none', got 'cognito'"],
    [{ throttlingRateLimit: 0 }, 'throttlingRateLimit must be a positive number of requests per second, got 0'],
    [{ throttlingBurstLimit: 1.5 }, 'throttlingBurstLimit must be a positive integer, got 1.5'],
    [{ controllerTickMs: 50 }, 'controllerTickMs must be an integer from 100 to 10000, got 50'],
    [{ controllerTickMs: 1000, brokerSessionTimeoutMs: 1500 }, 'brokerSessionTimeoutMs must be an integer from 2 × controllerTickMs (2000) to 300000, got 1500'],
    [{ snapshotExpirationDays: 0 }, 'snapshotExpirationDays must be a positive integer, got 0'],
    [{ alarmEmail: 'not-an-address' }, 'alarmEmail must be an email address, got "not-an-address"'],
    // (a zone name, a Local Zone's id, a token: the bucket's name is built from the literal AZ id)
    [{ stageAvailabilityZoneId: 'us-east-1a' }, 'stageAvailabilityZoneId must be an Availability Zone id such as "use1-az4", got "us-east-1a"'],
    [{ stageAvailabilityZoneId: 'usw2-lax1-az1' }, 'stageAvailabilityZoneId must be an Availability Zone id such as "use1-az4", got "usw2-lax1-az1"'],
    [{ stageAvailabilityZoneId: '' }, 'stageAvailabilityZoneId must be an Availability Zone id such as "use1-az4", got ""'],
    [{ stageAvailabilityZoneId: Aws.REGION }, 'stageAvailabilityZoneId must be an Availability Zone id such as "use1-az4", got "${Token[AWS.Region.'],
  ] as [TributaryClusterProps, string][])('rejects %o', (props, message) => {
    expect(build(props)).toThrow(message);
  });

  it('rejects an email address together with a topic', () => {
    const stack = new Stack(new App(), 'S');
    const alarmTopic = new Topic(stack, 'T');
    expect(() => new TributaryCluster(stack, 'Events', { alarmEmail: 'ops@example.com', alarmTopic }))
      .toThrow('alarmEmail and alarmTopic are mutually exclusive: subscribe the address to your topic instead');
  });

  it('rejects a token as the table prefix', () => {
    const stack = new Stack(new App(), 'S');
    expect(() => new TributaryCluster(stack, 'Events', { tablePrefix: Aws.STACK_NAME }))
      .toThrow("tablePrefix must be a literal string, not a token: table names are written into the controller's broker list at synth time");
  });

  it('applies the documented defaults', () => {
    const stack = new Stack(new App(), 'Prod');
    const p = resolveProps(stack, {});
    expect(p).toMatchObject({
      brokers: 3, racks: [null, null, null], apiType: 'http', authorization: 'iam', removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE, deletionProtection: false,
      throttlingRateLimit: 1000, throttlingBurstLimit: 500,
      controllerTickMs: 1000, brokerSessionTimeoutMs: 9000, logRetention: 30, bucketVersioning: false,
      snapshotExpirationDays: 7, s3ForcePathStyle: false,
    });
    expect(resolveProps(stack, { deletionProtection: true }).deletionProtection).toBe(true);
  });

  it('resolves a count to ids 1..N and a list to its ids, ascending, each with its rack', () => {
    const stack = new Stack(new App(), 'Prod');
    expect(resolveProps(stack, {})).toMatchObject({ brokers: 3, brokerIds: [1, 2, 3] });
    expect(resolveProps(stack, { brokers: [4, 0, 2], racks: ['d', 'z', 'b'] })).toMatchObject({ brokers: 3, brokerIds: [0, 2, 4], racks: ['z', 'b', 'd'] });
    expect(resolveProps(stack, { brokers: [7] })).toMatchObject({ brokers: 1, brokerIds: [7], racks: [null] });
    expect(resolveProps(stack, { brokers: Array.from({ length: 64 }, (_, i) => 2 ** 31 - 1 - i) }).brokerIds).toHaveLength(64);
  });

  it('gives two clusters in one stack different table prefixes', () => {
    const stack = new Stack(new App(), 'Prod');
    const a = new TributaryCluster(stack, 'Events', { brokers: 1 }).settings.tablePrefix;
    const b = new TributaryCluster(stack, 'Audit', { brokers: 1 }).settings.tablePrefix;
    expect(a).not.toBe(b);
    expect(a).toMatch(/^Prod-Events-/);
  });
});

describe('TributaryStack: props from context', () => {
  it('reads strings as the CLI passes them', () => {
    const app = new App({ context: { brokers: '5', racks: 'a, b,c,d,e', apiType: 'rest', authorization: 'none', removalPolicy: 'destroy', s3ForcePathStyle: 'true' } });
    expect(clusterPropsFromContext(app.node)).toEqual({
      brokers: 5, racks: ['a', 'b', 'c', 'd', 'e'], apiType: 'rest', authorization: 'none', removalPolicy: RemovalPolicy.DESTROY, s3ForcePathStyle: true,
    });
    const kept = new App({ context: { removalPolicy: 'retain', deletionProtection: 'true', throttlingRateLimit: '200', throttlingBurstLimit: '100', stageAvailabilityZoneId: 'euw1-az3' } });
    expect(clusterPropsFromContext(kept.node)).toEqual({ removalPolicy: RemovalPolicy.RETAIN, deletionProtection: true, throttlingRateLimit: 200, throttlingBurstLimit: 100, stageAvailabilityZoneId: 'euw1-az3' });
    expect(clusterPropsFromContext(new App({ context: { removalPolicy: 'retain-on-update-or-delete' } }).node))
      .toEqual({ removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE });
  });

  it('reads brokers as a count (`3`) or as ids (`1,2,4`, `[7]`, a list in cdk.json)', () => {
    const brokers = (v: unknown) => clusterPropsFromContext(new App({ context: { brokers: v } }).node).brokers;
    expect(brokers('3')).toBe(3);
    expect(brokers('1,2,4')).toEqual([1, 2, 4]);
    expect(brokers(' 1, 2 ,4 ')).toEqual([1, 2, 4]);
    expect(brokers('[1,2,4]')).toEqual([1, 2, 4]);
    expect(brokers('[7]')).toEqual([7]);
    expect(brokers([1, 2, 4])).toEqual([1, 2, 4]);
    expect(brokers([7])).toEqual([7]);
    expect(brokers(3)).toBe(3);
    expect(brokers(undefined)).toBeUndefined();
    // Malformed entries reach resolveProps as NaN or an empty list, which names the problem.
    expect(brokers('1,,2')).toEqual([1, Number.NaN, 2]);
    expect(brokers('[]')).toEqual([]);
    expect(build({ brokers: brokers('1,x') as never })).toThrow('brokers[1] must be a broker id, an integer from 0 to 2147483647, got NaN');
  });

  it('rejects an unknown removal policy', () => {
    expect(() => clusterPropsFromContext(new App({ context: { removalPolicy: 'snapshot' } }).node)).toThrow("context removalPolicy must be one of retain-on-update-or-delete, retain, destroy, got 'snapshot'");
  });
});
