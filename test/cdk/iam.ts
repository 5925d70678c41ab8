/** Reads a function's effective permissions out of a synthesized template, for least-privilege assertions. */
import type { Synthesized } from './synth.js';

export interface Permissions {
  /** Table logical id → what the function may do with its items. */
  readonly tables: Map<string, 'read' | 'write'>;
  /** Table logical ids whose stream the function may read. */
  readonly streams: Set<string>;
  /** Bucket prefixes (`data/`) whose objects it may get / put. */
  readonly objectsRead: Set<string>;
  readonly objectsWritten: Set<string>;
  /** Prefixes it may list (the s3:prefix condition, without the trailing `*`). */
  readonly listed: Set<string>;
  /** Actions granted on `*`. */
  readonly starActions: Set<string>;
  /** Every statement, as found. */
  readonly statements: any[];
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export function permissionsOf(s: Synthesized, functionLogicalId: string): Permissions {
  const fn = s.json.Resources[functionLogicalId];
  if (!fn) throw new Error(`no resource ${functionLogicalId}`);
  const roleId = fn.Properties.Role['Fn::GetAtt'][0] as string;
  const statements = Object.values(s.json.Resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && list(r.Properties.Roles).some((x: any) => x.Ref === roleId))
    .flatMap((r) => list(r.Properties.PolicyDocument.Statement));
  const p: Permissions = {
    tables: new Map(), streams: new Set(), objectsRead: new Set(), objectsWritten: new Set(), listed: new Set(), starActions: new Set(), statements,
  };
  for (const st of statements) {
    if (st.Effect !== 'Allow') continue;
    const actions = list<string>(st.Action);
    for (const res of list<any>(st.Resource)) {
      if (res === '*') {
        actions.forEach((a) => p.starActions.add(a));
        continue;
      }
      const getAtt = res['Fn::GetAtt'] as [string, string] | undefined;
      const join = res['Fn::Join'] as [string, any[]] | undefined;
      const type = getAtt ? s.json.Resources[getAtt[0]]?.Type : undefined;
      if (getAtt && type === 'AWS::DynamoDB::Table' && getAtt[1] === 'Arn') {
        if (actions.includes('dynamodb:PutItem')) p.tables.set(getAtt[0], 'write');
        else if (actions.includes('dynamodb:GetItem') && !p.tables.has(getAtt[0])) p.tables.set(getAtt[0], 'read');
      } else if (getAtt && type === 'AWS::DynamoDB::Table' && getAtt[1] === 'StreamArn') {
        p.streams.add(getAtt[0]);
      } else if (getAtt && type === 'AWS::S3::Bucket' && actions.includes('s3:ListBucket')) {
        for (const prefix of list<string>(st.Condition?.StringLike?.['s3:prefix'])) p.listed.add(prefix.replace(/\*$/, ''));
      } else if (join && s.json.Resources[join[1][0]?.['Fn::GetAtt']?.[0]]?.Type === 'AWS::S3::Bucket') {
        const prefix = String(join[1][1]).replace(/^\//, '').replace(/\*$/, '');
        if (actions.includes('s3:GetObject')) p.objectsRead.add(prefix);
        if (actions.includes('s3:PutObject')) p.objectsWritten.add(prefix);
      }
    }
  }
  return p;
}
