/**
 * Structured JSON logs, one line per event (pino), on stderr so stdout stays for what a command
 * prints (Lambda sends both to CloudWatch). `LOG_LEVEL` sets the level; default `info`.
 * `LOG_FILE` sends them to a file instead (a tool whose console shows only its result).
 */
import { pino } from 'pino';

export const logger = pino({
  level: process.env.LOG_LEVEL ?? 'info',
  base: { service: 'tributary' },
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label) => ({ level: label }) },
}, process.env.LOG_FILE ? pino.destination({ dest: process.env.LOG_FILE, sync: true, mkdir: true }) : pino.destination({ fd: 2, sync: true }));
