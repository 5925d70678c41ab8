/**
 * Starting, before a Lambda-fidelity point is measured, every execution environment the point
 * needs. A cold start takes a second or two of this machine's CPU from every running environment
 * (in AWS it does not), so a point that starts environments measures the machine. Requests sent at
 * once start as many environments, but dozens of cold starts at once on two cores outlast Lambda's
 * 10 s init limit: each wave adds a few, until a wave of the largest point starts none.
 */

/** Environments a wave may start at once: their cold starts end within Lambda's init limit here. */
const WAVE_STEP = 8;

/** The local Lambda runtime's counters and environments (`GET /local/lambda`). */
export const lambdaStats = async (url: string) =>
  (await (await fetch(`${url}/local/lambda`)).json()) as { coldStarts: number; environments: { fn: string; state: string }[] };

/** The live execution environments of function `fn`. */
const environmentsOf = async (url: string, fn: string): Promise<number> =>
  (await lambdaStats(url)).environments.filter((e) => e.fn === fn && e.state !== 'dead').length;

/**
 * Sends waves of concurrent requests (`wave(n)` sends n at once and waits for their answers) until
 * `fn` has `count` environments and a wave of `count` started none.
 */
export async function warmEnvironments(url: string, fn: string, count: number, wave: (n: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < 4 * count; i++) {
    const before = await environmentsOf(url, fn);
    const n = Math.min(count, before + WAVE_STEP);
    await wave(n);
    if (before >= count && n === count) return;
  }
}
