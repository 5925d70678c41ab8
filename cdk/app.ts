/**
 * The CDK app (`cdk.json`: `npx tsx cdk/app.ts`): one TributaryStack, environment-agnostic (no
 * lookups, so `npm run synth` needs no AWS account and no network), checked by cdk-nag's
 * AwsSolutions rules during synthesis: any unacknowledged finding fails the synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TributaryStack, clusterPropsFromContext } from './stack.js';

const app = new App();
const stackName = (app.node.tryGetContext('stackName') as string | undefined) ?? 'TributaryStack';
new TributaryStack(app, stackName, { cluster: clusterPropsFromContext(app.node) });
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
