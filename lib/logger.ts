/**
 * Structured JSON logs, one line per event (pino), on stderr so stdout stays for what a command
 * prints (Lambda sends both to CloudWatch). `LOG_LEVEL` sets the level; default `info`.
 */
import { pino } from 'pino';

export const logger = pino({
  level: process.env.LOG_LEVEL ?? 'info',
  base: { service: 'tributary' },
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label) => ({ level: label }) },
}, pino.destination({ fd: 2, sync: true }));
