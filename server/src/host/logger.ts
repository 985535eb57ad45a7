import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat } from '../config';

/** What replaces a redacted value; a fixed string, so a leak test can look for it. */
export const redactedMark = '[redacted]';

/**
 * Values that must never reach a log line, wherever a logged object carries them. Baton never
 * logs headers or bodies (http/request-log.ts); this is the net under that rule, for an error or
 * a future log call that passes a request, its headers or a reply through. Credentials travel
 * in Authorization (key secrets and the admin token, as Bearer), X-Api-Key and Cookie; lease
 * tokens and key secrets travel in bodies (`token`, `secret`). Idempotency-Key is no secret
 * and stays readable. pino's paths match one level below a wildcard, no deeper.
 */
export const redactPaths: readonly string[] = [
  ...credentialHeaderPaths('headers'),
  ...credentialHeaderPaths('*.headers'),
  'body',
  '*.body',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'adminToken',
  '*.adminToken',
];

function credentialHeaderPaths(prefix: string): string[] {
  return ['authorization', '["x-api-key"]', 'cookie', '["set-cookie"]'].map((name) => (name.startsWith('[') ? `${prefix}${name}` : `${prefix}.${name}`));
}

export interface LoggerSettings {
  level: string;
  format: LogFormat;
  /** Where lines go; stdout when unset. Tests pass an in-memory stream. */
  destination?: DestinationStream;
}

export function loggerOptions(level: string): LoggerOptions {
  return { level, redact: { paths: [...redactPaths], censor: redactedMark } };
}

/** The server's logger: the same options and redaction in both formats. */
export function createLogger(settings: LoggerSettings): Logger {
  const options = loggerOptions(settings.level);
  if (settings.format === 'pretty') return pino(options, prettyStream(settings.destination));
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/** LOG_FORMAT when set; otherwise a person is reading a terminal, and a machine anything else. */
export function resolveLogFormat(configured: LogFormat | undefined, isTerminal: boolean): LogFormat {
  return configured ?? (isTerminal ? 'pretty' : 'json');
}

/**
 * pino-pretty in this thread rather than as a worker transport: it resolves the same from the
 * sources and from a bundle, and synchronous writes keep the last lines before process.exit.
 */
function prettyStream(destination: DestinationStream | undefined): DestinationStream {
  return pretty({ destination: destination ?? 1, sync: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}
