/**
 * Synthesizing the CDK app in-process for tests: the context of cdk.json (tests do not read it
 * otherwise), bundling skipped unless asked for, and a temporary cloud assembly that is removed.
 *
 * aws-cdk-lib's built-in CloudFormation template validation (a WASM rule engine; cdk.json makes its
 * findings errors) runs only when asked for: it costs about 13 s to start in each test process and
 * 1 s a synth, on templates most files synthesize only to read one property. The files that check
 * whole flavours (nag.test.ts, limits.test.ts) ask for it, as `npm run synth` always runs it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { TributaryStack } from '../../cdk/stack.js';
import type { TributaryClusterProps } from '../../cdk/props.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const CDK_CONTEXT = (JSON.parse(fs.readFileSync(path.join(ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }).context;

export interface Synthesized {
  readonly app: App;
  readonly stack: TributaryStack;
  readonly template: Template;
  /** The cloud assembly directory; removed at once unless `keep` was asked for. */
  readonly outdir: string;
  readonly json: { Resources: Record<string, { Type: string; Properties?: any; DeletionPolicy?: string }>; Outputs?: Record<string, any> };
  cleanup(): void;
}

/** An app as the tests synthesize it: cdk.json's context, no analytics, no bundling or validation unless asked for. */
export function testApp(o: { outdir?: string; bundle?: boolean; validate?: boolean } = {}): App {
  return new App({
    ...(o.outdir ? { outdir: o.outdir } : {}),
    analyticsReporting: false,
    builtinCloudFormationValidation: o.validate ?? false,
    context: { ...CDK_CONTEXT, ...(o.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }) },
  });
}

export function synth(cluster: TributaryClusterProps = {}, o: { bundle?: boolean; keep?: boolean; validate?: boolean; extend?: (stack: TributaryStack) => void } = {}): Synthesized {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-cdk-'));
  const cleanup = () => fs.rmSync(outdir, { recursive: true, force: true });
  try {
    const app = testApp({ outdir, bundle: o.bundle, validate: o.validate });
    const stack = new TributaryStack(app, 'TestStack', { cluster });
    o.extend?.(stack);
    const template = Template.fromStack(stack);
    if (!o.keep) cleanup();
    return { app, stack, template, outdir, json: template.toJSON() as Synthesized['json'], cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

/** Resources of one type, by logical id. */
export function resourcesOf(s: Synthesized, type: string): [string, any][] {
  return Object.entries(s.json.Resources).filter(([, r]) => r.Type === type).map(([id, r]) => [id, r.Properties ?? {}]);
}

/** The logical id of a construct's CloudFormation resource. */
export function logicalId(s: Synthesized, construct: { node: { defaultChild?: unknown } }): string {
  return s.stack.getLogicalId(construct.node.defaultChild as never);
}
