/** Kafka ACLs: every binding, creating one, deleting one (exactly that binding). */
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from '../../../client/index.js';
import { cluster } from '../common/api.js';
import { ActionForm, ConfirmButton, ErrorNote, Field, Loading, Page, Table } from '../common/components.js';
import { usePoll } from '../common/poll.js';

const nameOf = (table: Record<string, number>, n: number): string => Object.entries(table).find(([, v]) => v === n)?.[0] ?? String(n);
const choices = (table: Record<string, number>, skip: readonly string[]) => Object.keys(table).filter((k) => !skip.includes(k));

interface Binding { resourceType: number; resourceName: string; resourcePatternType: number; principal: string; host: string; operation: number; permissionType: number }

export function AclsPage({ security }: { security: boolean }) {
  const acls = usePoll(async (): Promise<Binding[]> => {
    const r = await cluster().admin.describeAcls({});
    return r.resources.flatMap((res) => res.acls.map((a) => ({ resourceType: res.resourceType, resourceName: res.resourceName, resourcePatternType: res.resourcePatternType, ...a })));
  }, [], 5_000);
  const key = (b: Binding) => JSON.stringify(b);
  return (
    <Page title="ACLs" sub={!security && <p class="note">Authentication is off on this API, so every caller is <code>User:ANONYMOUS</code>; ACLs are stored and enforced for that principal.</p>}>
      <ActionForm label="Create an ACL" submit="Create ACL" class="inline" onDone={acls.refresh} action={async (d) => {
        const entry = {
          principal: String(d.get('principal')), host: String(d.get('host') || '*'),
          resourceType: String(d.get('resourceType')), resourceName: String(d.get('resourceName')), resourcePatternType: String(d.get('patternType')),
          operation: String(d.get('operation')), permissionType: String(d.get('permission')),
        };
        await cluster().admin.createAcls({ acl: [entry] });
        return `${entry.permissionType} ${entry.principal} ${entry.operation} on ${entry.resourceType} ${entry.resourceName}.`;
      }}>
        <Field label="Principal"><input name="principal" required placeholder="User:alice" pattern="[^:]+:.+" /></Field>
        <Field label="Host"><input name="host" value="*" /></Field>
        <Field label="Resource type"><select name="resourceType">{choices(AclResourceTypes, ['UNKNOWN', 'ANY']).map((k) => <option>{k}</option>)}</select></Field>
        <Field label="Resource name"><input name="resourceName" required /></Field>
        <Field label="Pattern type"><select name="patternType"><option>LITERAL</option><option>PREFIXED</option></select></Field>
        <Field label="Operation"><select name="operation">{choices(AclOperationTypes, ['UNKNOWN', 'ANY']).map((k) => <option>{k}</option>)}</select></Field>
        <Field label="Permission"><select name="permission"><option>ALLOW</option><option>DENY</option></select></Field>
      </ActionForm>
      <ErrorNote error={acls.error} />
      {!acls.data ? <Loading what="ACLs" /> : (
        <Table caption="ACLs" rows={acls.data} rowKey={key} empty="No ACLs." columns={[
          { label: 'Principal', cell: (b) => <code>{b.principal}</code> },
          { label: 'Host', cell: (b) => b.host },
          { label: 'Operation', cell: (b) => nameOf(AclOperationTypes, b.operation) },
          { label: 'Permission', cell: (b) => <span class={`badge ${b.permissionType === AclPermissionTypes.DENY ? 'bad' : 'ok'}`}>{nameOf(AclPermissionTypes, b.permissionType)}</span> },
          { label: 'Resource', cell: (b) => `${nameOf(AclResourceTypes, b.resourceType)} ${b.resourceName}` },
          { label: 'Pattern', cell: (b) => nameOf(ResourcePatternTypes, b.resourcePatternType) },
          { label: 'Delete', cell: (b) => <ConfirmButton label={`Delete ACL for ${b.principal}`} confirm={`Delete this ACL of ${b.principal}?`} onDone={acls.refresh}
            action={async () => void (await cluster().admin.deleteAcls({ filters: [{ ...b }] }))} /> },
        ]} />
      )}
    </Page>
  );
}
