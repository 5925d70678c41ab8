/** Puts `process.env` back as `saved` was: keys added since are removed, changed ones restored. */
export function restoreEnv(saved: Readonly<NodeJS.ProcessEnv>): void {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
}
