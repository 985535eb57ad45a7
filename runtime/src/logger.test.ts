import { describe, expect, it, vi } from 'vitest';
import { consoleLogger, formatLogLine } from './logger';

describe('the default logger', () => {
  it('writes one line: level, message, then key=value with values that hold spaces quoted', () => {
    const line = formatLogLine('warn', { code: 'FORBIDDEN', status: 403, error: 'credential lacks coordination_write', retry: true, skipped: undefined }, 'admit failed; backing off');
    expect(line).toBe('baton warn: admit failed; backing off code=FORBIDDEN status=403 error="credential lacks coordination_write" retry=true');
    expect(formatLogLine('info', { note: 'two\nlines' }, 'm')).not.toContain('\n');
  });

  it('sends info to stdout and warnings and errors to stderr', () => {
    const out = vi.spyOn(console, 'log').mockImplementation(() => {});
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      consoleLogger.info({ holder: 'w1' }, 'worker started');
      consoleLogger.error({ code: 'NOT_FOUND' }, 'worker stopped');
      expect(out).toHaveBeenCalledWith('baton info: worker started holder=w1');
      expect(err).toHaveBeenCalledWith('baton error: worker stopped code=NOT_FOUND');
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  });
});
