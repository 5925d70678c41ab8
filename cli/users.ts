/**
 * `tributary users add <principal>`: a user of a local cluster started with `--auth`, appended to
 * `<data-dir>/credentials.json` with a new token, which is printed (and only here). The running
 * gateway accepts it within 2 s (local/credentials.ts).
 */
import type { Command } from 'commander';
import { addUser, credentialsPath } from '../local/credentials.js';
import { printJson, UsageError } from './output.js';

export function usersCommands(p: Command, json: () => boolean): void {
  const users = p.command('users').description('users of a local cluster started with --auth');
  users.command('add <principal>')
    .description('add a user (e.g. User:alice) with a new token to <data-dir>/credentials.json and print the token')
    .option('--data-dir <dir>', 'the local cluster\'s data directory (env TRIBUTARY_DATA_DIR)')
    .action((principal: string, o: { dataDir?: string }) => {
      const dir = o.dataDir ?? process.env.TRIBUTARY_DATA_DIR;
      if (!dir) throw new UsageError('users add needs --data-dir (or TRIBUTARY_DATA_DIR): the directory the local cluster was started with.');
      let token: string;
      try {
        token = addUser(credentialsPath(dir), principal);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      if (json()) printJson({ principal, token });
      else process.stdout.write(`${token}\n`);
    });
}
