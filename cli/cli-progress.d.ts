// cli-progress ships no types (@types/cli-progress is not a dependency): the part the CLI uses.
declare module 'cli-progress' {
  interface Options { format?: string; hideCursor?: boolean }
  export class SingleBar {
    constructor(options: Options, preset?: unknown);
    start(total: number, start: number, payload?: Record<string, unknown>): void;
    update(value: number, payload?: Record<string, unknown>): void;
    stop(): void;
  }
  export const Presets: { shades_classic: unknown };
  const cliProgress: { SingleBar: typeof SingleBar; Presets: typeof Presets };
  export default cliProgress;
}
