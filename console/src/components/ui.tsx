import type { ComponentChildren } from 'preact';
import { useCan } from '../console-context';
import type { Permission } from '../api/session';

export function PageTitle({ children }: { children: ComponentChildren }) {
  return <h1>{children}</h1>;
}

export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

/** Children only when the key holds `permission`; otherwise says why nothing is shown. */
export function Needs({ permission, children }: { permission: Permission; children: ComponentChildren }) {
  if (!useCan(permission)) return <p class="note">This key lacks {permission}: the API would refuse it this view.</p>;
  return <>{children}</>;
}

/** Used against a limit (null: no cap). A <meter> when capped, so the fill is announced too. */
export function UsageMeter({ label, used, limit }: { label: string; used: number; limit: number | null }) {
  return (
    <div class="usage">
      <span class="usage-label">{label}</span>
      <span class="usage-figures">
        {used.toLocaleString('en-US')} {limit === null ? '(no cap)' : `of ${limit.toLocaleString('en-US')}`}
      </span>
      {limit !== null && limit > 0 && <meter min={0} max={limit} high={limit * 0.8} optimum={0} value={used} aria-label={`${label}: ${used} of ${limit}`} />}
    </div>
  );
}

export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

export function ageInWords(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}

/** Minor units as a decimal amount: 12345 at scale 2 is 123.45 (BigInt: amounts are strings). */
export function money(minor: string, scale: number, currency: string): string {
  const value = BigInt(minor);
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = scale === 0 ? digits : digits.slice(0, -scale);
  const fraction = scale === 0 ? '' : `.${digits.slice(-scale)}`;
  return `${negative ? '-' : ''}${whole}${fraction} ${currency}`;
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`state state-${state.toLowerCase()}`}>{state}</span>;
}
