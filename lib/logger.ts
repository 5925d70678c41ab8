/**
 * Structured JSON logs, one line per event (pino), on stderr so stdout stays for what a command
 * prints (Lambda sends both to CloudWatch). `LOG_LEVEL` sets the level; default `info`.
 * `LOG_FILE` sends them to a file instead (a tool whose console shows only its result).
 *
 * No log line carries a secret: log calls name their fields (never a whole request, event or
 * record), and these paths are redacted wherever a caller passes one anyway — the Authorization
 * and Cookie headers (at the top, in `headers`, and in an `event`/`req`'s headers), tokens,
 * passwords and secrets, one level deep.
 */
import { pino } from 'pino';

export const REDACTED = '[redacted]';

export const REDACT_PATHS = [
  'authorization', 'Authorization', 'cookie', 'token', 'password', 'secret', 'credentials',
  'headers.authorization', 'headers.Authorization', 'headers.cookie', 'headers["x-amz-security-token"]',
  '*.authorization', '*.token', '*.password', '*.secret', '*.credentials',
  '*.headers.authorization', '*.headers.Authorization', '*.headers.cookie', '*.headers["x-amz-security-token"]',
  'multiValueHeaders.authorization', '*.multiValueHeaders.authorization',
];

export const logger = pino({
  level: process.env.LOG_LEVEL ?? 'info',
  base: { service: 'tributary' },
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label) => ({ level: label }) },
  redact: { paths: REDACT_PATHS, censor: REDACTED },
}, process.env.LOG_FILE ? pino.destination({ dest: process.env.LOG_FILE, sync: true, mkdir: true }) : pino.destination({ fd: 2, sync: true }));
