/**
 * What the worker says to its user. The shape is pino's (and bunyan's, and most structured
 * loggers'): a context object first, then the message, so `logger: pino()` plugs in as it is.
 */
export interface WorkerLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Says nothing: for tests, or a caller that reads onEvent instead. */
export const silentLogger: WorkerLogger = { info() {}, warn() {}, error() {} };

/** A field's value in a one-line log: plain when it has no space, quoted JSON otherwise. */
function formatValue(value: unknown): string {
  if (value instanceof Error) return JSON.stringify(value.message);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text !== undefined && /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text ?? String(value));
}

/** `message key=value ...`, one line whatever the fields hold. */
export function formatLogLine(level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string): string {
  const pairs = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${formatValue(value)}`);
  return [`baton ${level}:`, message, ...pairs].join(' ');
}

/**
 * The default: one line per entry on the console (info to stdout, warn and error to stderr), so
 * a worker started with no options shows what it does and, above all, what goes wrong.
 */
export const consoleLogger: WorkerLogger = {
  info: (fields, message) => console.log(formatLogLine('info', fields, message)),
  warn: (fields, message) => console.error(formatLogLine('warn', fields, message)),
  error: (fields, message) => console.error(formatLogLine('error', fields, message)),
};
