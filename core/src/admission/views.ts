import type { AdmittedDeliveryView } from '../schemas/admission';
import type { ClaimedResources } from './model';

/** What a claim holds, as admit replies and events show it: names, not ids; nothing for a raw recv. */
export function claimedView(c: ClaimedResources | null): AdmittedDeliveryView['claimed'] {
  return {
    pools: (c?.pools ?? []).map((p) => ({ name: p.name, units: p.units })),
    quotas: (c?.quotas ?? []).map((q) => ({ name: q.name, units: q.units })),
    budgets: (c?.budgets ?? []).map((b) => ({ name: b.name, reservationId: b.reservationId, amountMinor: b.amountMinor })),
    workLimit: c?.workLimit?.name ?? null,
  };
}
