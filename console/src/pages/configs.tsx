/** A topic's configs: every value with its source; set or reset one (incrementally, as Kafka's IncrementalAlterConfigs). */
import { cluster } from '../common/api.js';
import { ActionForm, ErrorNote, Field, Loading, Page, Table } from '../common/components.js';
import { ConfigResourceTypes } from '../../../client/index.js';
import { usePoll } from '../common/poll.js';
import { TopicNav } from './topic-nav.js';

export function ConfigsPage({ topic }: { topic: string }) {
  const configs = usePoll(async () => (await cluster().admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] })).resources[0]?.configEntries ?? [], [topic], 10_000);
  const alter = (name: string, value: string | null) => cluster().admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name, value }] }] });
  return (
    <Page title={`${topic} / configs`} sub={<TopicNav topic={topic} />}>
      <ActionForm label="Set a config" submit="Set" class="inline" onDone={configs.refresh} action={async (d) => {
        const name = String(d.get('name'));
        const value = String(d.get('value') ?? '');
        await alter(name, value === '' ? null : value);
        return value === '' ? `${name} is back to its default.` : `${name} = ${value}`;
      }}>
        <Field label="Config name">
          <select name="name">{(configs.data ?? []).filter((c) => !c.readOnly).map((c) => <option>{c.configName}</option>)}</select>
        </Field>
        <Field label="Value" hint="Empty: back to the default"><input name="value" /></Field>
      </ActionForm>
      <ErrorNote error={configs.error} />
      {!configs.data ? <Loading what="configs" /> : (
        <Table caption="Configs" rows={configs.data} rowKey={(c) => c.configName} columns={[
          { label: 'Name', cell: (c) => <code>{c.configName}</code> },
          { label: 'Value', cell: (c) => (c.isSensitive ? '(sensitive)' : c.configValue ?? '—') },
          { label: 'Source', cell: (c) => (c.isDefault ? 'default' : c.configSource ?? 'topic') },
          { label: 'Read-only', cell: (c) => (c.readOnly ? 'yes' : 'no') },
        ]} />
      )}
    </Page>
  );
}
