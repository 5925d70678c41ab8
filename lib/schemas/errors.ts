/**
 * Confluent Schema Registry's errors, with its codes: the HTTP status and `error_code` its
 * clients read (`{"error_code":40401,"message":"Subject 'x' not found."}`).
 */
import { HttpError } from '../errors.js';

/** A value as an error message shows it: a string cut at 100 characters, a scalar, or the kind of an object (it may nest too deep to print). */
export function shown(raw: unknown): string {
  if (raw === undefined) return 'nothing';
  if (typeof raw === 'string') return JSON.stringify(raw.length > 100 ? `${raw.slice(0, 100)}…` : raw);
  if (raw === null || typeof raw !== 'object') return String(raw);
  return Array.isArray(raw) ? 'an array' : 'an object';
}

export const subjectNotFound = (subject: string) => new HttpError(404, 40401, `Subject '${subject}' not found.`);
export const versionNotFound = (version: number | string) => new HttpError(404, 40402, `Version ${version} not found.`);
export const schemaNotFound = (what = 'Schema not found') => new HttpError(404, 40403, what);
export const subjectSoftDeleted = (subject: string) =>
  new HttpError(404, 40404, `Subject '${subject}' was soft deleted. Set permanent=true to delete permanently`);
export const subjectNotSoftDeleted = (subject: string) =>
  new HttpError(404, 40405, `Subject '${subject}' was not deleted first before being permanently deleted`);
export const versionSoftDeleted = (subject: string, version: number) =>
  new HttpError(404, 40406, `Subject '${subject}' Version ${version} was soft deleted. Set permanent=true to delete permanently`);
export const versionNotSoftDeleted = (subject: string, version: number) =>
  new HttpError(404, 40407, `Subject '${subject}' Version ${version} was not deleted first before being permanently deleted`);
export const compatibilityNotConfigured = (subject: string) =>
  new HttpError(404, 40408, `Subject '${subject}' does not have subject-level compatibility configured`);
export const incompatible = (messages: readonly string[]) =>
  new HttpError(409, 409, `Schema being registered is incompatible with an earlier schema for subject; details: ${JSON.stringify(messages)}`);
export const invalidSchema = (why: string) => new HttpError(422, 42201, `Invalid schema: ${why}`);
export const invalidVersion = (raw: string) =>
  new HttpError(422, 42202, `The specified version '${raw}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string "latest"`);
export const invalidCompatibility = (raw: unknown) =>
  new HttpError(422, 42203, `Invalid compatibility level ${shown(raw)}. Valid values are NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE`);
export const invalidMode = (raw: unknown) => new HttpError(422, 42204, `Invalid mode ${shown(raw)}. Valid values are READWRITE and READONLY`);
export const operationNotPermitted = (why: string) => new HttpError(422, 42205, why);
export const invalidSubject = (why: string) => new HttpError(422, 42208, `Invalid subject: ${why}`);
/** The registry is out of retries against concurrent writers (rare: each retry reads what won). */
export const tooManyRaces = () => new HttpError(503, 50002, 'The registration lost too many races with concurrent writers; retry it');
