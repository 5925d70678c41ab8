/**
 * A Protobuf schema's text parsed twice: alone (the declarations that are its own) and into a root
 * with its references and the Google well-known types it imports, every type resolved. Both the
 * schema (lib/schemas/protobuf.ts) and its descriptor form (protobuf-descriptor.ts) read it.
 */
import protobuf from 'protobufjs';
import { invalidSchema } from './errors.js';
import type { ResolvedReference } from './model.js';

export const PARSE_OPTIONS = { keepCase: true };

export interface ProtoRoots {
  /** the schema's own declarations, names unresolved */
  readonly own: protobuf.Root;
  /** the schema with its references and well-known imports, resolved */
  readonly root: protobuf.Root;
  readonly pkg: string;
  readonly imports: readonly string[];
}

/** The schema's roots (42201 for a reference that is not PROTOBUF or an import no reference provides). */
export function protoRoots(text: string, references: readonly ResolvedReference[]): ProtoRoots {
  const own = protobuf.parse(text, new protobuf.Root(), PARSE_OPTIONS);
  const root = new protobuf.Root();
  const provided = new Set<string>();
  for (const ref of references) {
    if (ref.schemaType !== 'PROTOBUF') throw invalidSchema(`reference ${ref.name} is ${ref.schemaType}, not PROTOBUF`);
    protobuf.parse(ref.schema, root, PARSE_OPTIONS);
    provided.add(ref.name);
  }
  const main = protobuf.parse(text, root, PARSE_OPTIONS);
  for (const imp of main.imports ?? []) {
    if (provided.has(imp)) continue;
    const known = protobuf.common.get(imp);
    if (!known) throw invalidSchema(`the import ${imp} is not among the schema's references`);
    root.addJSON((known as { nested: Record<string, protobuf.AnyNestedObject> }).nested);
    provided.add(imp);
  }
  root.resolveAll();
  return { own: own.root, root, pkg: main.package ?? '', imports: main.imports ?? [] };
}
