/**
 * Compatibility levels (global, default BACKWARD, and per subject) and the registry's mode
 * (READWRITE, or READONLY: no registration or deletion). Read from the table at each use, with
 * strong consistency: a level just set applies to the next registration on every instance.
 */
import { deleteCompatibility, getCompatibility, getMode, putCompatibility, putMode } from '../storage/coordination/schemas.js';
import { DEFAULT_LEVEL, isLevel, type CompatibilityLevel } from './compatibility.js';
import { checkSubject } from './model.js';
import { compatibilityNotConfigured, invalidCompatibility, invalidMode, operationNotPermitted } from './errors.js';

export const MODES = ['READWRITE', 'READONLY'] as const;
export type Mode = (typeof MODES)[number];

const stored = (v: string | undefined): CompatibilityLevel | undefined => (isLevel(v) ? v : undefined);

/** The level that applies to a subject: its own, else the global one, else BACKWARD. */
export async function effectiveLevel(subject: string): Promise<CompatibilityLevel> {
  const [own, global] = await Promise.all([getCompatibility(subject), getCompatibility(null)]);
  return stored(own) ?? stored(global) ?? DEFAULT_LEVEL;
}

/** GET /config: the global level. */
export async function globalLevel(): Promise<CompatibilityLevel> {
  return stored(await getCompatibility(null)) ?? DEFAULT_LEVEL;
}

/** GET /config/{s}: the subject's own level; with `defaultToGlobal`, the global one when it has none (40408 otherwise). */
export async function subjectLevel(subject: string, defaultToGlobal: boolean): Promise<CompatibilityLevel> {
  checkSubject(subject);
  const own = stored(await getCompatibility(subject));
  if (own) return own;
  if (defaultToGlobal) return globalLevel();
  throw compatibilityNotConfigured(subject);
}

/** PUT /config[/{s}] (42203 for a level that is not one). */
export async function setLevel(subject: string | null, level: unknown): Promise<CompatibilityLevel> {
  if (subject !== null) checkSubject(subject);
  if (!isLevel(level)) throw invalidCompatibility(level);
  await putCompatibility(subject, level);
  return level;
}

/** DELETE /config/{s}: removes the subject's level (40408 when it has none); DELETE /config: back to BACKWARD. Answers the level removed. */
export async function deleteLevel(subject: string | null): Promise<CompatibilityLevel> {
  if (subject !== null) checkSubject(subject);
  const old = stored(await deleteCompatibility(subject));
  if (subject !== null && !old) throw compatibilityNotConfigured(subject);
  return old ?? DEFAULT_LEVEL;
}

export async function mode(): Promise<Mode> {
  const m = await getMode();
  return m === 'READONLY' ? 'READONLY' : 'READWRITE';
}

/** PUT /mode (42204 for a mode this registry does not have: IMPORT is not offered). */
export async function setMode(m: unknown): Promise<Mode> {
  if (m !== 'READWRITE' && m !== 'READONLY') throw invalidMode(m);
  await putMode(m);
  return m;
}

/** Writes are refused in READONLY mode (42205). */
export async function requireWritable(): Promise<void> {
  if ((await mode()) === 'READONLY') throw operationNotPermitted('The registry is in READONLY mode: no schema may be registered or deleted');
}
