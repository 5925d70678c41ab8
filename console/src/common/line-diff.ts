/**
 * The line diff the subject page loads on demand: only `diffLines` of jsdiff, so its chunk holds
 * that and nothing else of the library (a dynamic import of the package itself would take it all).
 */
export { diffLines } from 'diff';
