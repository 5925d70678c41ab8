/** The produce form: one record, to a partition or wherever its key maps, with headers; acks=all. */
import { cluster } from '../common/api.js';
import { ActionForm, Field } from '../common/components.js';
import { Page } from '../common/components.js';
import { usePoll } from '../common/poll.js';
import { TopicNav } from './topic-nav.js';

/** `name: value` per line. */
function headersOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`A header line is "name: value"; got "${line}".`);
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

export function ProducePage({ topic }: { topic: string }) {
  const parts = usePoll(() => cluster().admin.describePartitions(topic), [topic], 0);
  const count = parts.data?.length ?? 0;
  return (
    <Page title={`${topic} / produce`} sub={<TopicNav topic={topic} />}>
      <ActionForm label="Produce a message" submit="Produce" action={async (d) => {
        const which = String(d.get('partition'));
        const key = String(d.get('key') ?? '');
        const headers = headersOf(String(d.get('headers') ?? ''));
        const [meta] = await cluster().producer.send({
          topic,
          messages: [{ value: String(d.get('value') ?? ''), ...(key ? { key } : {}), ...(which === 'any' ? {} : { partition: Number(which) }), ...(Object.keys(headers).length ? { headers } : {}) }],
        });
        if (!meta) throw new Error('The cluster acknowledged nothing.');
        return `Produced to partition ${meta.partition} at offset ${meta.baseOffset}`;
      }}>
        <Field label="Partition" hint="Any: the key picks it (murmur2, as Kafka's producers), or a round-robin when there is no key.">
          <select name="partition">
            <option value="any">Any</option>
            {Array.from({ length: count }, (_, i) => <option value={String(i)}>{i}</option>)}
          </select>
        </Field>
        <Field label="Key"><input name="key" /></Field>
        <Field label="Value" hint="Text; JSON is shown pretty-printed by the message browser."><textarea name="value" rows={6} /></Field>
        <Field label="Headers" hint="One per line: name: value"><textarea name="headers" rows={2} /></Field>
      </ActionForm>
    </Page>
  );
}
